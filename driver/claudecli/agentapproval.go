package claudecli

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// decide is the SDK's CanUseTool: the CLI's question becomes an approval
// event, and the callback waits for its resolution (or the session's end).
func (s *canonicalSession) decide(ctx context.Context, req claude.PermissionRequest) (claude.PermissionResult, error) {
	if s.rewrite != nil {
		req.Input = s.rewrite.unwrap(req.Input) // the model's command, not the sandbox's
	}
	s.mu.Lock()
	id := req.ToolUseID
	if id == "" || s.pending[id] != nil {
		id = "approval-" + strconv.Itoa(len(s.pending)+1) + "-" + req.ToolName
	}
	p := &pendingApproval{toolUseID: req.ToolUseID, tool: req.ToolName, answer: make(chan agent.Resolution, 1)}
	e := s.mapper.approvalRequested(id, &cc.CanUseToolRequest{ToolName: req.ToolName, Input: req.Input,
		ToolUseID: req.ToolUseID, Title: req.Title}, nil)
	e.Approval.Scopes = []agent.Scope{agent.ScopeOnce, agent.ScopeSession}
	if req.ToolName == askTool { // only its input is decoded: a Write's may hold a whole file
		if q, ok := askQuestion(req.Input); ok {
			// A question: the person chooses among its options, once.
			p.question = q
			e.Approval.Kind, e.Approval.Question, e.Approval.Title, e.Approval.Scopes = agent.ApprovalQuestion, q, q.Prompt, nil
		}
	}
	s.pending[id] = p
	s.out.Add(e)
	s.mu.Unlock()
	var r agent.Resolution
	select {
	case r = <-p.answer:
	case <-ctx.Done(): // the CLI withdrew the question (an interrupt)
		_ = s.settle(id, agent.Resolution{Decision: agent.Deny, Reason: "the turn was interrupted", Cause: agent.CauseInterrupted})
		r = <-p.answer // ours, or an answer that came first
	}
	s.mu.Lock()
	s.out.Add(s.mapper.approvalResolved(p.toolUseID, p.tool, withID(r, id)))
	s.mu.Unlock()
	if r.Decision != agent.Allow {
		return claude.Deny{Message: r.Reason}, nil
	}
	allow := claude.Allow{}
	if p.question != nil && len(r.Answers) > 0 {
		in, err := answeredInput(req.Input, p.question, r.Answers)
		if err != nil {
			return claude.Deny{Message: "tether: the question's input does not decode: " + err.Error()}, nil
		}
		return claude.Allow{UpdatedInput: in}, nil
	}
	if len(r.Input) > 0 {
		in, err := s.editedInput(req.ToolName, r.Input)
		if err != nil {
			return claude.Deny{Message: "tether: " + err.Error()}, nil
		}
		allow.UpdatedInput = in
	}
	if r.Scope == agent.ScopeSession {
		allow.UpdatedPermissions = []claude.PermissionUpdate{{Type: "addRules", Behavior: "allow",
			Destination: "session", Rules: []claude.PermissionRule{{ToolName: req.ToolName}}}}
	}
	return allow, nil
}

// editedInput is the input a call of tool runs with when an allow edited
// it: in a sandbox, a Bash command is wrapped as the sandbox's hook wraps
// the model's (that hook ran before the question, on the input asked).
func (s *canonicalSession) editedInput(tool string, in json.RawMessage) (json.RawMessage, error) {
	if s.rewrite == nil || tool != "Bash" {
		return in, nil
	}
	wrapped := s.rewrite.rewrite(in)
	if wrapped == nil {
		return nil, errors.New("the edited Bash input has no command")
	}
	return wrapped, nil
}

func withID(r agent.Resolution, id string) agent.Resolution {
	r.ApprovalID = id
	return r
}

// Resolve answers a pending approval; the first answer wins. One the CLI
// asked through a relay is answered to the CLI here.
func (s *canonicalSession) Resolve(ctx context.Context, r agent.Resolution) error {
	if r.Decision != agent.Allow && r.Decision != agent.Deny {
		return &agent.InvalidEventError{Kind: agent.KindApprovalResolved, Reason: "decision " + strconv.Quote(string(r.Decision))}
	}
	if r.Cause == "" {
		r.Cause = agent.CauseClient
	}
	s.mu.Lock()
	if err := s.settleLocked(r.ApprovalID, r); err != nil {
		s.mu.Unlock()
		return err
	}
	p := s.pending[r.ApprovalID]
	if !p.relayed {
		s.mu.Unlock()
		return nil
	}
	line, err := s.relayedAnswer(r.ApprovalID, p)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.relay.conn.Write(ctx, line)
}

// settle records the first resolution of id and wakes its callback.
func (s *canonicalSession) settle(id string, r agent.Resolution) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settleLocked(id, r)
}

// settleLocked is settle with mu held. The answer channel holds one, and
// only the first resolution is sent, so it never blocks.
func (s *canonicalSession) settleLocked(id string, r agent.Resolution) error {
	p, ok := s.pending[id]
	switch {
	case !ok:
		return agent.ErrUnknownApproval
	case p.first != nil:
		return &agent.AlreadyResolvedError{First: *p.first}
	case p.question != nil:
		q := agent.Approval{ID: id, Kind: agent.ApprovalQuestion, Question: p.question}
		if err := q.CheckAnswers(r); err != nil {
			return err
		}
	}
	r.ApprovalID = id
	if r.At.IsZero() {
		r.At = s.now()
	}
	p.first = &r
	p.answer <- r
	return nil
}
