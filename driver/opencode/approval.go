package opencode

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// Resolve answers a pending permission request or question; the first
// answer wins. A permission's allow is "once" or "always" (ScopeOnce,
// ScopeAlways), its deny "reject" with the reason told to the model. A
// question's allow replies with the chosen options' labels, its deny
// dismisses it.
func (s *session) Resolve(ctx context.Context, r agent.Resolution) error {
	reply, err := permissionReply(r) // a decision and scope OpenCode has, whatever is asked
	if err != nil {
		return err
	}
	if r.Cause == "" {
		r.Cause = agent.CauseClient
	}
	s.mu.Lock()
	st := s.mapper.approvals[r.ApprovalID]
	switch {
	case st == nil:
		s.mu.Unlock()
		return agent.ErrUnknownApproval
	case st.first != nil:
		first := *st.first
		s.mu.Unlock()
		return &agent.AlreadyResolvedError{First: first}
	}
	path, body, err := s.answer(st, r, reply)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if r.At.IsZero() {
		r.At = s.d.now()
	}
	st.first = &r // claimed: a second answer is refused from here on
	s.mu.Unlock()

	err = s.api.do(ctx, http.MethodPost, path, body, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if !st.resolved {
			st.first = nil // the agent was not told: the approval still waits
		}
		return fmt.Errorf("opencode: resolve %s: %w", r.ApprovalID, err)
	}
	s.out.Add(s.mapper.resolved(r, nil)...)
	return nil
}

// answer is the request that tells OpenCode the resolution: a permission
// reply, or a question's reply (the chosen labels) or rejection, each a
// POST of body to path. Call with mu held; the request is sent without it.
func (s *session) answer(st *approvalState, r agent.Resolution, reply oc.PermissionReply) (path string, body any, err error) {
	if st.approval.Kind != agent.ApprovalQuestion {
		path, err = oc.PermissionReplyPath(r.ApprovalID)
		return path, oc.PermissionReplyRequest{Reply: reply, Message: replyMessage(r)}, err
	}
	if err := st.approval.CheckAnswers(r); err != nil {
		return "", nil, err
	}
	if r.Decision == agent.Deny {
		path, err = oc.QuestionRejectPath(r.ApprovalID)
		return path, nil, err
	}
	path, err = oc.QuestionReplyPath(r.ApprovalID)
	return path, questionReply(st, r.Answers), err
}

func permissionReply(r agent.Resolution) (oc.PermissionReply, error) {
	switch r.Decision {
	case agent.Deny:
		return oc.ReplyReject, nil
	case agent.Allow:
		switch r.Scope {
		case "", agent.ScopeOnce:
			return oc.ReplyOnce, nil
		case agent.ScopeAlways:
			return oc.ReplyAlways, nil
		}
		return "", &agent.UnsupportedError{Agent: agentName, Capability: "allow with scope " + string(r.Scope)}
	}
	return "", &agent.InvalidEventError{Kind: agent.KindApprovalResolved, Reason: "decision " + strconv.Quote(string(r.Decision))}
}

// replyMessage is what a reject tells the model.
func replyMessage(r agent.Resolution) string {
	if r.Decision == agent.Deny {
		return r.Reason
	}
	return ""
}
