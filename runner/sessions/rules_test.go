package sessions_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

// A deny for the session is kept by the core: the next call of the same
// tool is denied without a client's answer, it is never listed as
// pending, and the rule outlives a reopen. A deny beyond the session is
// refused, the approval staying open for a good answer.
func TestDenyForTheSession(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}
	m := newManager(t, c, 0)
	info, err := m.Create(ctx(t), sessionsCreate("w-rules"))
	if err != nil {
		t.Fatal(err)
	}
	live := follow(t, m, info.ID, 0)
	if err := m.Prompt(ctx(t), info.ID, agent.Prompt{Text: "write it"}); err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	asked := until(t, live, agent.KindApprovalRequested, &seen)
	if _, err := m.Resolve(ctx(t), info.ID, agent.Resolution{ApprovalID: asked.Approval.ID, Decision: agent.Deny, Scope: agent.ScopeAlways}); !errors.Is(err, agent.ErrUnsupported) {
		t.Fatalf("a deny beyond the session: %v", err)
	}
	won, err := m.Resolve(ctx(t), info.ID, agent.Resolution{ApprovalID: asked.Approval.ID, Decision: agent.Deny, Scope: agent.ScopeSession, By: "editor"})
	if err != nil || won.Scope != agent.ScopeSession {
		t.Fatalf("deny for the session: %+v %v", won, err)
	}
	until(t, live, agent.KindTurnCompleted, &seen)

	ruled := func(live <-chan agent.Event) {
		t.Helper()
		if err := m.Prompt(ctx(t), info.ID, agent.Prompt{Text: "write it again"}); err != nil {
			t.Fatal(err)
		}
		again := until(t, live, agent.KindApprovalRequested, &seen)
		if again.Approval.Tool != asked.Approval.Tool {
			t.Fatalf("asked for %q, then %q", asked.Approval.Tool, again.Approval.Tool)
		}
		res := until(t, live, agent.KindApprovalResolved, &seen)
		if res.Resolution.ApprovalID != again.Approval.ID || res.Resolution.Decision != agent.Deny || res.Resolution.Cause != agent.CauseRule {
			t.Fatalf("the rule's answer: %+v", res.Resolution)
		}
		until(t, live, agent.KindTurnCompleted, &seen)
		if pending, err := m.Approvals(); err != nil || len(pending) != 0 {
			t.Fatalf("pending after the rule: %+v %v", pending, err)
		}
	}
	ruled(live)

	if err := m.Close(ctx(t), info.ID); err != nil {
		t.Fatal(err)
	}
	end := until(t, live, agent.KindSessionEnded, &seen)
	if _, err := m.Reopen(ctx(t), info.ID, uint64(end.Seq), false); err != nil {
		t.Fatal(err)
	}
	ruled(follow(t, m, info.ID, uint64(end.Seq)))
}

func sessionsCreate(workspace string) sessions.CreateRequest {
	return sessions.CreateRequest{Agent: "claude", WorkspaceID: workspace}
}
