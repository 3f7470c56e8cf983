package codex

import (
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/protocol/codexapp"
)

// Rows of docs/events-codex.md, each against a capture of the real
// app-server (testdata/*.transcript.jsonl).

// thread/start's result → session.started; turn/started → turn.started;
// userMessage items → user_message; agentMessage item and its deltas →
// message; turn/completed → usage, turn.completed with the answer.
func TestMapTextAndTurns(t *testing.T) {
	events := replay(t, "app-server-approval-interrupt.transcript.jsonl")
	first := events[0]
	if first.Kind != agent.KindSessionStarted || first.Session.Agent != "codex" || first.Session.NativeID != "01a2017c-2682-7880-94ba-7e29ac27a8ab" || first.Session.Cwd != "<workdir>" {
		t.Fatalf("first event %+v %+v", first, first.Session)
	}
	starts := find(events, agent.KindTurnStarted, "")
	if len(starts) != 2 || method(starts[0]) != codexapp.MethodTurnStarted || starts[0].TurnID != "01a2017c-2699-7291-9660-279240adf693" {
		t.Fatalf("turn.started %+v", starts)
	}
	users := find(events, agent.KindItemCompleted, agent.ItemUserMessage)
	if len(users) != 2 || users[0].Item.Text != "please USE_SHELL" || users[1].Item.Text != "be SLOW please" {
		t.Errorf("user messages %+v", users)
	}
	msgs := find(events, agent.KindItemCompleted, agent.ItemMessage)
	if len(msgs) != 2 || msgs[0].Item.ID != "msg_fake_13" || !strings.HasPrefix(msgs[0].Item.Text, "tool said: ") || msgs[0].Item.Status != agent.ItemDone {
		t.Fatalf("messages %+v", msgs[0].Item)
	}
	var streamed strings.Builder
	for _, e := range find(events, agent.KindItemDelta, "") {
		if e.Delta.ItemID == "msg_fake_13" {
			if e.Delta.Field != agent.FieldText || method(e) != codexapp.MethodAgentMessageDelta {
				t.Errorf("delta %+v", e.Delta)
			}
			streamed.WriteString(e.Delta.Text)
		}
	}
	if streamed.String() != msgs[0].Item.Text {
		t.Errorf("deltas built %q, the item says %q", streamed.String(), msgs[0].Item.Text)
	}
	ends := find(events, agent.KindTurnCompleted, "")
	if len(ends) != 2 || ends[0].Turn.Status != agent.TurnCompleted || ends[0].Turn.Text != msgs[0].Item.Text || ends[0].Usage == nil {
		t.Fatalf("turn.completed %+v", ends)
	}
	// thread/tokenUsage/updated: the turn's usage is the thread's total
	// less what it was when the turn started.
	if u := ends[0].Usage; u.InputTokens != 40 || u.OutputTokens != 16 {
		t.Errorf("usage %+v", u)
	}
	usage := find(events, agent.KindUsage, "")
	if len(usage) != 1 || method(usage[0]) != codexapp.MethodTokenUsageUpdated {
		t.Errorf("usage events %+v", usage)
	}
}

// item/commandExecution/requestApproval → approval.requested; the answer
// → approval.resolved; commandExecution items → command with output and
// exit code; serverRequest/resolved of an answered request → nothing. The
// approval may be allowed for the session (acceptForSession), though Codex
// lists only accept, an execpolicy amendment and cancel.
func TestMapCommandApproval(t *testing.T) {
	events := replay(t, "app-server-approval-interrupt.transcript.jsonl")
	reqs := find(events, agent.KindApprovalRequested, "")
	if len(reqs) != 1 {
		t.Fatalf("approval.requested %+v", reqs)
	}
	a := reqs[0].Approval
	if a.ID != "call_fake_12" || a.ItemID != "call_fake_12" || a.Tool != "shell" || a.Title != "Shell: /bin/bash -lc 'echo hello'" ||
		!slices.Equal(a.Scopes, []agent.Scope{agent.ScopeOnce, agent.ScopeSession}) || method(reqs[0]) != codexapp.MethodCommandApproval || a.TurnID == "" {
		t.Errorf("approval %+v", a)
	}
	for scope, want := range map[agent.Scope]string{agent.ScopeOnce: codexapp.DecisionAccept, agent.ScopeSession: codexapp.DecisionAcceptForSession} {
		ap := &approval{sessionScope: slices.Contains(a.Scopes, agent.ScopeSession)}
		if got := ap.decision(agent.Resolution{Decision: agent.Allow, Scope: scope}); got != want {
			t.Errorf("an allow for scope %s answers %q, want %q", scope, got, want)
		}
	}
	res := find(events, agent.KindApprovalResolved, "")
	if len(res) != 1 || res[0].Resolution.ApprovalID != a.ID || res[0].Resolution.Decision != agent.Allow || res[0].Resolution.Cause != agent.CauseClient {
		t.Errorf("approval.resolved %+v", res)
	}
	started := find(events, agent.KindItemStarted, agent.ItemCommand)
	done := find(events, agent.KindItemCompleted, agent.ItemCommand)
	if len(started) != 1 || len(done) != 1 || started[0].Item.ID != done[0].Item.ID {
		t.Fatalf("command items %+v %+v", started, done)
	}
	c := done[0].Item.Command
	if done[0].Item.Status != agent.ItemDone || c.Output != "hello\n" || c.ExitCode == nil || *c.ExitCode != 0 || c.Cwd != "<workdir>" {
		t.Errorf("command %+v %+v", done[0].Item, c)
	}
}

// turn/completed interrupted → turn.completed interrupted, and the item
// left open (the message being streamed) completes failed first; the
// process's exit after the client closed → session.ended closed.
func TestMapInterrupt(t *testing.T) {
	events := replay(t, "app-server-approval-interrupt.transcript.jsonl")
	ends := find(events, agent.KindTurnCompleted, "")
	if ends[1].Turn.Status != agent.TurnInterrupted || ends[1].Turn.DurationMS != 1213 {
		t.Fatalf("interrupted turn %+v", ends[1].Turn)
	}
	var open agent.Event
	for i, e := range events {
		if e.Kind == agent.KindTurnCompleted && e.Turn.Status == agent.TurnInterrupted {
			open = events[i-1]
		}
	}
	if open.Kind != agent.KindItemCompleted || open.Item.ID != "msg_fake_14" || open.Item.Status != agent.ItemFailed {
		t.Errorf("before the interrupted end: %+v", open)
	}
	last := events[len(events)-1]
	if last.Kind != agent.KindSessionEnded || last.Session.Reason != "closed" {
		t.Errorf("last event %+v", last)
	}
}

// A declined command → its item declined; error {willRetry} → error
// {api_error, status}; turn/completed failed → turn.completed failed
// {api_error, 500}; a steer's userMessage → user_message in the running
// turn.
func TestMapDeclineErrorSteer(t *testing.T) {
	events := replay(t, "app-server-decline-error-steer.transcript.jsonl")
	res := find(events, agent.KindApprovalResolved, "")
	if len(res) != 1 || res[0].Resolution.Decision != agent.Deny {
		t.Fatalf("approval.resolved %+v", res)
	}
	cmds := find(events, agent.KindItemCompleted, agent.ItemCommand)
	if len(cmds) != 1 || cmds[0].Item.Status != agent.ItemDeclined {
		t.Errorf("declined command %+v", cmds)
	}
	errs := find(events, agent.KindError, "")
	if len(errs) != 1 || errs[0].Error.Code != agent.ErrorAPI || errs[0].Error.Status != 500 || errs[0].Error.Retrying || method(errs[0]) != codexapp.MethodError {
		t.Errorf("error events %+v", errs)
	}
	ends := find(events, agent.KindTurnCompleted, "")
	if len(ends) != 3 {
		t.Fatalf("%d turn.completed", len(ends))
	}
	if e := ends[1]; e.Turn.Status != agent.TurnFailed || e.Error.Code != agent.ErrorAPI || e.Error.Status != 500 || !strings.Contains(e.Error.Message, "high demand") {
		t.Errorf("failed turn %+v %+v", e.Turn, e.Error)
	}
	var steered bool
	for _, e := range find(events, agent.KindItemCompleted, agent.ItemUserMessage) {
		if e.Item.Text == "and be brief" {
			steered = e.TurnID == ends[2].TurnID
		}
	}
	if !steered || ends[2].Turn.Text != "hi there from fake openai" {
		t.Errorf("the steer is not in the third turn; it ended %+v", ends[2].Turn)
	}
}

// Notifications the model has nothing for (thread/status/changed,
// remoteControl/status/changed, deprecationNotice, thread/goal/cleared,
// thread/started) map to nothing; every event keeps its line.
func TestMapUnmappedAndRaw(t *testing.T) {
	events := replay(t, "app-server-decline-error-steer.transcript.jsonl")
	for _, e := range events {
		switch m := method(e); m {
		case "thread/status/changed", "remoteControl/status/changed", "deprecationNotice", "thread/goal/cleared", "thread/started":
			t.Errorf("%s mapped to %s", m, e.Kind)
		}
		switch e.Kind {
		case agent.KindItemStarted, agent.KindItemDelta, agent.KindTurnStarted, agent.KindApprovalRequested, agent.KindError:
			if len(e.Raw) == 0 {
				t.Errorf("%s without its raw line", e.Kind)
			}
		}
	}
}
