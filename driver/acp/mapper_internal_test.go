package acp

import (
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
)

// A resolution picks the option of its decision and scope, falling back
// to the other scope, and cancels when nothing fits or the turn ended.
func TestPickOption(t *testing.T) {
	opts := []acpsdk.PermissionOption{
		{OptionId: "always", Kind: acpsdk.PermissionOptionKindAllowAlways},
		{OptionId: "once", Kind: acpsdk.PermissionOptionKindAllowOnce},
		{OptionId: "no", Kind: acpsdk.PermissionOptionKindRejectOnce},
	}
	cases := []struct {
		r    agent.Resolution
		want string
	}{
		{agent.Resolution{Decision: agent.Allow, Scope: agent.ScopeOnce, Cause: agent.CauseClient}, "once"},
		{agent.Resolution{Decision: agent.Allow, Scope: agent.ScopeAlways, Cause: agent.CauseClient}, "always"},
		{agent.Resolution{Decision: agent.Deny, Scope: agent.ScopeAlways, Cause: agent.CauseClient}, "no"},
		{agent.Resolution{Decision: agent.Deny, Cause: agent.CauseInterrupted}, ""},
	}
	for _, c := range cases {
		got := pick(opts, c.r)
		id := ""
		if got.Outcome.Selected != nil {
			id = string(got.Outcome.Selected.OptionId)
		} else if got.Outcome.Cancelled == nil {
			t.Fatalf("%+v: no outcome", c.r)
		}
		if id != c.want {
			t.Errorf("%+v picked %q, want %q", c.r, id, c.want)
		}
	}
}

// A permission asked before its tool call is announced, then the call's
// failure after a deny, is one item that ends declined.
func TestMapperDeclinedBeforeAnnounced(t *testing.T) {
	m := newMapper("x", time.Now, true)
	m.startTurn("")
	kind := acpsdk.ToolKindExecute
	title := "rm -rf build"
	evs := m.toolUpdate(&acpsdk.SessionToolCallUpdate{ToolCallId: "c1", Kind: &kind, Title: &title})
	if len(evs) != 1 || evs[0].Kind != agent.KindItemStarted || evs[0].Item.Command.Command != title {
		t.Fatalf("started %+v", evs)
	}
	m.denied["c1"] = true
	failed := acpsdk.ToolCallStatusFailed
	evs = m.update(acpsdk.SessionUpdate{ToolCallUpdate: &acpsdk.SessionToolCallUpdate{ToolCallId: "c1", Status: &failed}})
	if len(evs) != 1 || evs[0].Item.Status != agent.ItemDeclined {
		t.Fatalf("completed %+v", evs)
	}
	end := m.endTurn(agent.TurnCompleted, nil, nil, 0)
	if len(end) != 1 || end[0].Kind != agent.KindTurnCompleted {
		t.Fatalf("turn end %+v", end)
	}
	for _, e := range append(evs, end...) {
		if err := e.Validate(); err != nil {
			t.Error(err)
		}
	}
}
