package acp

import (
	"context"
	"errors"
	"slices"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
)

// Option ids of a permission request.
const (
	optAllowOnce   = "allow_once"
	optAllowAlways = "allow_always"
	optRejectOnce  = "reject_once"
	optRejectAll   = "reject_always"
	optAnswer      = "answer:"
)

// permissionOptions are an approval's answers as ACP options: allow once,
// reject once, and reject always (the core denies the tool's later calls
// in the session); allow always where the agent takes a scope beyond the
// call (always, else the session's); a question's options, one each, when
// it takes one answer.
func permissionOptions(a agent.Approval) ([]acpsdk.PermissionOption, map[string]agent.Resolution) {
	var opts []acpsdk.PermissionOption
	answers := map[string]agent.Resolution{}
	add := func(id, name string, kind acpsdk.PermissionOptionKind, r agent.Resolution) {
		r.ApprovalID, r.Cause = a.ID, agent.CauseClient
		opts = append(opts, acpsdk.PermissionOption{OptionId: acpsdk.PermissionOptionId(id), Name: name, Kind: kind})
		answers[id] = r
	}
	if a.Kind == agent.ApprovalQuestion && a.Question != nil && len(a.Question.Options) > 0 {
		for _, o := range a.Question.Options {
			add(optAnswer+o.ID, o.Label, acpsdk.PermissionOptionKindAllowOnce, agent.Resolution{Decision: agent.Allow, Answers: []string{o.ID}})
		}
		add(optRejectOnce, "Dismiss", acpsdk.PermissionOptionKindRejectOnce, agent.Resolution{Decision: agent.Deny, Reason: "dismissed in the editor"})
		return opts, answers
	}
	add(optAllowOnce, "Allow once", acpsdk.PermissionOptionKindAllowOnce, agent.Resolution{Decision: agent.Allow, Scope: agent.ScopeOnce})
	for _, s := range []agent.Scope{agent.ScopeAlways, agent.ScopeSession} {
		if hasScope(a.Scopes, s) {
			name := "Allow always"
			if s == agent.ScopeSession {
				name = "Allow for this session"
			}
			add(optAllowAlways, name, acpsdk.PermissionOptionKindAllowAlways, agent.Resolution{Decision: agent.Allow, Scope: s})
			break
		}
	}
	add(optRejectOnce, "Reject", acpsdk.PermissionOptionKindRejectOnce, agent.Resolution{Decision: agent.Deny, Reason: "rejected in the editor"})
	add(optRejectAll, "Reject for this session", acpsdk.PermissionOptionKindRejectAlways,
		agent.Resolution{Decision: agent.Deny, Scope: agent.ScopeSession, Reason: "rejected in the editor for the rest of the session"})
	return opts, answers
}

func hasScope(scopes []agent.Scope, s agent.Scope) bool {
	for _, v := range scopes {
		if v == s {
			return true
		}
	}
	return false
}

// ask puts an approval to the editor as session/request_permission and
// hands its answer to the core. A cancelled turn, or an approval settled
// elsewhere first, withdraws the request.
func (f *front) ask(core Core, sessionID string, a agent.Approval, tc acpsdk.ToolCallUpdate, t *turn) {
	if tc.Title == nil {
		tc.Title = acpsdk.Ptr(a.Title)
	}
	if a.Question != nil && a.Question.Prompt != "" {
		tc.Title = acpsdk.Ptr(a.Question.Prompt)
	}
	opts, answers := permissionOptions(a)
	ctx, cancel := context.WithCancel(t.ctx)
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		cancel()
		return
	}
	t.asks[a.ID] = cancel
	t.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer t.settled(a.ID)
		if !stillPending(ctx, core, a.ID) {
			return // a rule of the session answered it: nobody is asked
		}
		resp, err := f.conn.RequestPermission(ctx, acpsdk.RequestPermissionRequest{SessionId: acpsdk.SessionId(sessionID), ToolCall: tc, Options: opts})
		if err != nil || ctx.Err() != nil {
			return // withdrawn: the turn was cancelled or the approval settled
		}
		var r agent.Resolution
		switch {
		case resp.Outcome.Selected != nil:
			var ok bool
			if r, ok = answers[string(resp.Outcome.Selected.OptionId)]; !ok {
				f.cfg.Logger.Warn("acp: permission answered with no option of its own", "option", resp.Outcome.Selected.OptionId)
				return
			}
		case t.cancelled():
			return // the interrupt settles it
		default:
			r = agent.Resolution{ApprovalID: a.ID, Decision: agent.Deny, Cause: agent.CauseClient, Reason: "cancelled in the editor"}
		}
		r.By = "acp"
		if _, err := core.Resolve(context.WithoutCancel(ctx), sessionID, r); err != nil && !errors.Is(err, agent.ErrAlreadyResolved) {
			f.cfg.Logger.Warn("acp: approval not resolved", "approval", a.ID, "err", strings.TrimSpace(err.Error()))
		}
	}()
}

// stillPending says whether approval id waits for an answer; when the
// core cannot say, it does.
func stillPending(ctx context.Context, core Core, id string) bool {
	if ctx.Err() != nil {
		return false
	}
	pending, err := core.Approvals()
	if err != nil {
		return true
	}
	return slices.ContainsFunc(pending, func(r approvals.Record) bool { return r.Approval.ID == id })
}

// settled withdraws the permission request of an approval that is
// settled.
func (t *turn) settled(approvalID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.asks[approvalID]; ok {
		c()
		delete(t.asks, approvalID)
	}
}
