package opencode

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// Resolve answers a pending permission request; the first answer wins. An
// allow is "once" or "always" (ScopeOnce, ScopeAlways), a deny "reject"
// with the reason told to the model.
func (s *session) Resolve(ctx context.Context, r agent.Resolution) error {
	reply, err := permissionReply(r)
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
	if r.At.IsZero() {
		r.At = s.d.now()
	}
	st.first = &r // claimed: a second answer is refused from here on
	s.mu.Unlock()

	path, err := oc.PermissionReplyPath(r.ApprovalID)
	if err == nil {
		err = s.api.do(ctx, http.MethodPost, path, oc.PermissionReplyRequest{Reply: reply, Message: replyMessage(r)}, nil)
	}
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
