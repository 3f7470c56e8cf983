package codex

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/protocol/codexapp"
)

// approval is one of Codex's approval requests: pending until its first
// resolution, then kept so a later one learns what was decided.
type approval struct {
	id     string
	req    codexapp.ID
	method string
	item   string // the item it is about
	// sessionScope says Codex takes acceptForSession for it.
	sessionScope bool
	first        *agent.Resolution
	// question is set for a question approval, with what its answer is
	// made from: a request_user_input call or an MCP elicitation.
	question    *agent.Question
	userInput   *codexapp.ToolRequestUserInputParams
	elicitation *elicitation
}

// approvals are a session's approval requests by id; the session's lock
// guards them.
type approvals struct {
	byID      map[string]*approval
	byRequest map[codexapp.ID]*approval
	order     []*approval // pending ones are resolved in request order
}

func newApprovals() approvals {
	return approvals{byID: map[string]*approval{}, byRequest: map[codexapp.ID]*approval{}}
}

// request opens an approval for a server request and returns its event.
func (a *approvals) request(req *codexapp.Request, m *mapper, now time.Time) agent.Event {
	ap := &approval{req: req.ID, method: req.Method}
	var item, turn, title, tool string
	switch p := req.Payload.(type) {
	case *codexapp.ToolRequestUserInputParams:
		item, turn, tool = p.ItemID, p.TurnID, "request_user_input"
		ap.userInput, ap.question = p, userInputQuestion(p)
	case *codexapp.McpElicitationParams:
		tool = "mcp:" + p.ServerName
		if p.TurnID != nil {
			turn = *p.TurnID
		}
		ap.elicitation = newElicitation(p)
		ap.question = ap.elicitation.question
	case *codexapp.CommandApprovalParams:
		item, turn, tool = p.ItemID, p.TurnID, "shell"
		// Codex takes acceptForSession for every command (it then runs the
		// same command again in the thread without asking) though it lists
		// it only for some, not for a plain shell command.
		ap.sessionScope = true
		cmd := p.Command
		if open, ok := m.openItem(p.ItemID); ok && open.Command != nil && cmd == "" {
			cmd = open.Command.Command
		}
		title = "Shell: " + cmd
		if p.ApprovalID != "" {
			ap.id = p.ApprovalID
		}
	case *codexapp.FileChangeApprovalParams:
		item, turn, tool = p.ItemID, p.TurnID, "apply_patch"
		ap.sessionScope = true
		title = "Edit files"
		if open, ok := m.openItem(p.ItemID); ok && len(open.Changes) > 0 {
			paths := make([]string, 0, len(open.Changes))
			for _, c := range open.Changes {
				paths = append(paths, c.Path)
			}
			title = "Edit: " + strings.Join(paths, ", ")
		}
	}
	ap.item = item
	if ap.id == "" {
		ap.id = item
	}
	if ap.id == "" || a.byID[ap.id] != nil {
		ap.id = "request-" + req.ID.String()
		if item != "" {
			ap.id = item + "/" + req.ID.String()
		}
	}
	a.byID[ap.id] = ap
	a.byRequest[ap.req] = ap
	a.order = append(a.order, ap)
	e := m.event(agent.KindApprovalRequested, req.Raw())
	if turn != "" {
		e.TurnID = turn
	}
	e.Approval = &agent.Approval{ID: ap.id, Kind: agent.ApprovalTool, SessionID: m.thread, Agent: Name,
		TurnID: e.TurnID, ItemID: item, Tool: tool, Input: req.Params, Title: title, Created: now}
	if ap.question != nil {
		e.Approval.Kind, e.Approval.Question, e.Approval.Title = agent.ApprovalQuestion, ap.question, ap.question.Prompt
		return e
	}
	e.Approval.Scopes = []agent.Scope{agent.ScopeOnce}
	if ap.sessionScope {
		e.Approval.Scopes = append(e.Approval.Scopes, agent.ScopeSession)
	}
	return e
}

// settle records the first resolution of id; a client's answers to a
// question must be among its options.
func (a *approvals) settle(id string, r agent.Resolution) (*approval, error) {
	ap, ok := a.byID[id]
	switch {
	case !ok:
		return nil, agent.ErrUnknownApproval
	case ap.first != nil:
		return nil, &agent.AlreadyResolvedError{First: *ap.first}
	case ap.question != nil:
		q := agent.Approval{ID: id, Kind: agent.ApprovalQuestion, Question: ap.question}
		if err := q.CheckAnswers(r); err != nil {
			return nil, err
		}
	}
	r.ApprovalID = id
	ap.first = &r
	a.forget(ap)
	return ap, nil
}

// forget drops a settled approval from the pending order.
func (a *approvals) forget(ap *approval) {
	for i, p := range a.order {
		if p == ap {
			a.order = append(a.order[:i], a.order[i+1:]...)
			return
		}
	}
}

// settleByRequest resolves the approval of a server request Codex settled
// itself; ok is false when there is none pending.
func (a *approvals) settleByRequest(req codexapp.ID, r agent.Resolution, m *mapper, raw []byte) (agent.Event, bool) {
	ap, ok := a.byRequest[req]
	if !ok || ap.first != nil {
		return agent.Event{}, false
	}
	if _, err := a.settle(ap.id, r); err != nil {
		return agent.Event{}, false
	}
	return resolvedEvent(m, *ap.first, raw), true
}

// clear resolves every pending approval as denied, for cause (the turn was
// interrupted or ended, the session closed).
func (a *approvals) clear(cause agent.Cause, m *mapper, now time.Time) []agent.Event {
	reason := "the turn ended"
	if cause == agent.CauseInterrupted {
		reason = "the turn was interrupted"
	}
	var out []agent.Event
	for len(a.order) > 0 {
		ap := a.order[0]
		if _, err := a.settle(ap.id, agent.Resolution{Decision: agent.Deny, Reason: reason, Cause: cause, At: now}); err != nil {
			a.forget(ap)
			continue
		}
		m.decline(ap.item)
		out = append(out, resolvedEvent(m, *ap.first, nil))
	}
	return out
}

func resolvedEvent(m *mapper, r agent.Resolution, raw []byte) agent.Event {
	e := m.event(agent.KindApprovalResolved, raw)
	e.Resolution = &r
	return e
}

// response is Codex's answer to the approval's request for a resolution:
// a question's answers, or a decision.
func (ap *approval) response(r agent.Resolution) any {
	switch {
	case ap.userInput != nil:
		return userInputAnswer(ap.userInput, ap.question, r)
	case ap.elicitation != nil:
		return ap.elicitation.answer(r)
	}
	return codexapp.ApprovalResponse{Decision: ap.decision(r)}
}

// decision is Codex's answer for a resolution: accept (once), or
// acceptForSession for an allow for the session, after which Codex does
// not ask again for the same command (or file) in the thread; decline lets
// the turn go on.
func (ap *approval) decision(r agent.Resolution) string {
	switch {
	case r.Decision != agent.Allow:
		return codexapp.DecisionDecline
	case r.Scope == agent.ScopeSession && ap.sessionScope:
		return codexapp.DecisionAcceptForSession
	}
	return codexapp.DecisionAccept
}

// serverRequest handles a request of the app-server: approvals and
// questions to the user (the model's request_user_input, MCP elicitations)
// wait for Resolve; the others (permission profiles, client tools) are
// refused, so the turn goes on without them.
func (s *session) serverRequest(req *codexapp.Request, decodeErr error) {
	switch req.Payload.(type) {
	case *codexapp.CommandApprovalParams, *codexapp.FileChangeApprovalParams,
		*codexapp.ToolRequestUserInputParams, *codexapp.McpElicitationParams:
		s.mu.Lock()
		s.out.Add(s.approvals.request(req, s.m, s.now()))
		s.mu.Unlock()
		return
	}
	code, msg := int64(codexapp.CodeMethodNotFound), "tether does not handle "+req.Method
	if decodeErr != nil {
		s.protocolError(req.Raw(), decodeErr)
		code, msg = codexapp.CodeInvalidParams, decodeErr.Error()
	} else {
		s.log.Warn("codex: refusing a server request the driver does not handle", "method", req.Method)
	}
	ctx, cancel := context.WithTimeout(s.ctx, answerTimeout)
	defer cancel()
	if err := s.rpc.refuse(ctx, req.ID, code, msg); err != nil {
		s.log.Warn("codex: answering a server request", "method", req.Method, "err", err)
	}
}

// Resolve answers a pending approval; the first answer wins.
func (s *session) Resolve(ctx context.Context, r agent.Resolution) error {
	if r.Decision != agent.Allow && r.Decision != agent.Deny {
		return &agent.InvalidEventError{Kind: agent.KindApprovalResolved, Reason: "decision " + strconv.Quote(string(r.Decision))}
	}
	if r.Cause == "" {
		r.Cause = agent.CauseClient
	}
	if r.At.IsZero() {
		r.At = s.now()
	}
	s.mu.Lock()
	ap, err := s.approvals.settle(r.ApprovalID, r)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.out.Add(resolvedEvent(s.m, *ap.first, nil))
	s.mu.Unlock()
	if err := s.rpc.answer(ctx, ap.req, ap.response(r)); err != nil {
		return fmt.Errorf("codex: answer approval %s: %w", ap.id, err)
	}
	return nil
}
