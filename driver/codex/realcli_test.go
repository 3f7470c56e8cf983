package codex_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
)

// A text turn: the prompt echoed as a user message, the answer streamed as
// deltas of one message item and completed whole, usage, the turn's end.
func TestRealCLIText(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	started, _ := w.kind(0, agent.KindSessionStarted)
	if started.Session.Agent != "codex" || started.Session.NativeID == "" || started.Session.NativeID != s.NativeID() {
		t.Fatalf("session.started %+v, native id %q", started.Session, s.NativeID())
	}
	if items, err := s.Messages(ctxFor(t)); err != nil || len(items) != 0 {
		t.Errorf("Messages before the first turn = %+v, %v", items, err)
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "SAY hello from the fake"}); err != nil {
		t.Fatal(err)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnCompleted || end.Turn.Text != "hello from the fake" || end.Usage == nil || end.Usage.InputTokens == 0 {
		t.Fatalf("turn.completed %+v usage %+v\n%s", end.Turn, end.Usage, w.dump())
	}
	msg, _ := w.until(0, func(e agent.Event) bool {
		return e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemMessage
	})
	var streamed strings.Builder
	var startedMsg bool
	for _, e := range w.since(0) {
		switch {
		case e.Kind == agent.KindItemStarted && e.Item.ID == msg.Item.ID:
			startedMsg = true
		case e.Kind == agent.KindItemDelta && e.Delta.ItemID == msg.Item.ID:
			streamed.WriteString(e.Delta.Text)
		}
	}
	if !startedMsg || streamed.String() != "hello from the fake" || msg.Item.Text != "hello from the fake" {
		t.Errorf("message %q streamed %q (started %v)", msg.Item.Text, streamed.String(), startedMsg)
	}
	items, err := s.Messages(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := itemTexts(items); !equal(got, []string{"user_message: SAY hello from the fake", "message: hello from the fake"}) {
		t.Errorf("Messages %q", got)
	}
}

func agentStart() agent.StartRequest { return agent.StartRequest{} }

// itemTexts is "type: text" of each user or agent message.
func itemTexts(items []agent.Item) []string {
	var out []string
	for _, it := range items {
		if it.Type == agent.ItemUserMessage || it.Type == agent.ItemMessage {
			out = append(out, string(it.Type)+": "+it.Text)
		}
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// isApproval matches approval.requested.
func isApproval(e agent.Event) bool { return e.Kind == agent.KindApprovalRequested }

// A shell command approved: the approval names the command and its scopes,
// the command ran (its output in the command item), the fake model saw the
// result, and a second resolution is refused with the first.
func TestRealCLIShellApproved(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "USE_SHELL echo hello"}); err != nil {
		t.Fatal(err)
	}
	req, _ := w.until(0, isApproval)
	a := req.Approval
	if !strings.Contains(a.Title, "echo hello") || a.ItemID == "" || a.Agent != "codex" || !slices.Contains(a.Scopes, agent.ScopeOnce) {
		t.Fatalf("approval %+v", a)
	}
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: a.ID, Decision: agent.Allow, By: "test"}); err != nil {
		t.Fatal(err)
	}
	err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: a.ID, Decision: agent.Deny})
	var already *agent.AlreadyResolvedError
	if !errors.As(err, &already) || already.First.Decision != agent.Allow || already.First.By != "test" {
		t.Errorf("second Resolve = %v, want *AlreadyResolvedError naming the allow", err)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnCompleted || end.Turn.Text != "tool said: hello" {
		t.Fatalf("turn.completed %+v\n%s", end.Turn, w.dump())
	}
	res, _ := w.kind(0, agent.KindApprovalResolved)
	if res.Resolution.ApprovalID != a.ID || res.Resolution.Decision != agent.Allow || res.Resolution.Cause != agent.CauseClient {
		t.Errorf("approval.resolved %+v", res.Resolution)
	}
	cmd, _ := w.until(0, func(e agent.Event) bool {
		return e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand
	})
	c := cmd.Item.Command
	if cmd.Item.ID != a.ItemID || cmd.Item.Status != agent.ItemDone || c.Output != "hello\n" || c.ExitCode == nil || *c.ExitCode != 0 || !strings.Contains(c.Command, "echo hello") {
		t.Errorf("command item %+v %+v", cmd.Item, c)
	}
	if out := lastToolOutput(t, r.srv); !strings.Contains(out, "hello") {
		t.Errorf("the fake saw tool output %q", out)
	}
}

// A shell command denied: it did not run (its file was not made), its item
// is declined, and the turn goes on to an answer.
func TestRealCLIShellDenied(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "USE_SHELL touch ran.txt"}); err != nil {
		t.Fatal(err)
	}
	req, _ := w.until(0, isApproval)
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: req.Approval.ID, Decision: agent.Deny, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("turn.completed %+v\n%s", end.Turn, w.dump())
	}
	cmd, _ := w.until(0, func(e agent.Event) bool {
		return e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand
	})
	if cmd.Item.Status != agent.ItemDeclined {
		t.Errorf("command item %+v, want declined", cmd.Item)
	}
	if _, err := os.Stat(filepath.Join(r.ws, "ran.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the denied command ran: stat ran.txt: %v", err)
	}
	if out := lastToolOutput(t, r.srv); !strings.Contains(out, "rejected") {
		t.Errorf("the fake saw tool output %q, want the rejection", out)
	}
}

// lastToolOutput is the tool result the fake model was last sent.
func lastToolOutput(t *testing.T, srv *fakeopenai.Server) string {
	t.Helper()
	reqs := srv.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		var body struct {
			Input []struct {
				Type   string          `json:"type"`
				Output json.RawMessage `json:"output"`
			} `json:"input"`
		}
		if json.Unmarshal(reqs[i].Body, &body) != nil {
			continue
		}
		for j := len(body.Input) - 1; j >= 0; j-- {
			if strings.HasSuffix(body.Input[j].Type, "_call_output") {
				return string(body.Input[j].Output)
			}
		}
	}
	return ""
}
