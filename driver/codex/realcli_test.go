package codex_test

import (
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/fakeopenai"
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
