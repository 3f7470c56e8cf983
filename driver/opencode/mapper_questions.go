package opencode

import (
	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// questionAsked maps the question tool's request onto a question
// approval, once: its first question, the options numbered from 0. The
// answer goes back as labels (see questionReply).
func (m *mapper) questionAsked(r *oc.QuestionRequest, raw []byte) []agent.Event {
	if _, seen := m.approvals[r.ID]; seen || len(r.Questions) == 0 {
		return nil
	}
	events := m.startTurn()
	q := questionOf(r.Questions[0])
	a := agent.Approval{ID: r.ID, Kind: agent.ApprovalQuestion, SessionID: m.session, Agent: agentName, TurnID: m.turn,
		Tool: "question", Title: q.Prompt, Question: q, Created: m.now()}
	if r.Tool != nil {
		a.ItemID = m.calls[r.Tool.CallID]
	}
	m.approvals[r.ID] = &approvalState{approval: a, questions: len(r.Questions)}
	e := m.event(agent.KindApprovalRequested, raw)
	e.Approval = &a
	return append(events, e)
}

// questionOf is a question of the question tool as the canonical model
// has it, the options numbered from 0: the same for its item and its
// approval.
func questionOf(info oc.QuestionInfo) *agent.Question {
	labels := make([]string, len(info.Options))
	for i, o := range info.Options {
		labels[i] = o.Label
	}
	return agent.NewQuestion(info.Question, info.Multiple, labels)
}

// questionReplied is the agent's word that a question was answered (by
// this driver, already reported, or by another client); questionRejected
// that it was dismissed.
func (m *mapper) questionReplied(p *oc.QuestionReplied, raw []byte) []agent.Event {
	r := agent.Resolution{ApprovalID: p.RequestID, Decision: agent.Allow, Cause: agent.CauseAgent, At: m.now()}
	if st := m.approvals[p.RequestID]; st != nil && len(p.Answers) > 0 && st.approval.Question != nil {
		r.Answers = st.approval.Question.IDs(p.Answers[0])
	}
	return m.resolved(r, raw)
}

func (m *mapper) questionRejected(p *oc.QuestionRejected, raw []byte) []agent.Event {
	return m.resolved(agent.Resolution{ApprovalID: p.RequestID, Decision: agent.Deny, Cause: agent.CauseAgent, At: m.now()}, raw)
}

// questionReply is what OpenCode takes for an allow of a question: the
// chosen labels of the first question, nothing chosen for the others.
func questionReply(st *approvalState, answers []string) oc.QuestionReplyRequest {
	req := oc.QuestionReplyRequest{Answers: make([][]string, max(st.questions, 1))}
	req.Answers[0] = st.approval.Question.Labels(answers)
	for i := 1; i < len(req.Answers); i++ {
		req.Answers[i] = []string{}
	}
	return req
}
