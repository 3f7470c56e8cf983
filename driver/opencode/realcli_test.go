package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A text turn: session.started with the native id, the prompt echoed as a
// user message, the answer streamed as deltas of one item and completed
// whole, usage, and the turn's text; Messages has both.
func TestRealCLITextTurn(t *testing.T) {
	env := newRealEnv(t, nil)
	r := env.start(t, agent.StartRequest{})
	first, _ := r.next(10 * time.Second)
	if first.Kind != agent.KindSessionStarted || first.Session.Agent != "opencode" || first.Session.NativeID != r.s.NativeID() || !strings.HasPrefix(r.s.NativeID(), "ses_") {
		t.Fatalf("first event %+v, native id %q", first, r.s.NativeID())
	}
	r.prompt("SAY hello from the fake")
	end := r.turnEnd()
	if end.Turn.Status != agent.TurnCompleted || end.Turn.Text != "hello from the fake" || end.Usage == nil || end.Usage.InputTokens == 0 {
		t.Fatalf("turn.completed %+v usage %+v error %+v", end.Turn, end.Usage, end.Error)
	}
	var deltas strings.Builder
	var started, completed *agent.Item
	var user bool
	for _, e := range r.seen {
		switch {
		case e.Kind == agent.KindItemStarted && e.Item.Type == agent.ItemMessage:
			started = e.Item
		case e.Kind == agent.KindItemDelta:
			if started == nil || e.Delta.ItemID != started.ID {
				t.Errorf("delta %+v before its item started", e.Delta)
			}
			deltas.WriteString(e.Delta.Text)
		case e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemMessage:
			completed = e.Item
		case e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemUserMessage:
			user = e.Item.Text == "SAY hello from the fake"
		}
		if e.Kind != agent.KindSessionStarted && len(e.Raw) == 0 && e.Kind != agent.KindTurnStarted {
			t.Errorf("%s has no raw payload", e.Kind)
		}
	}
	if started == nil || completed == nil || completed.ID != started.ID || completed.Text != "hello from the fake" || deltas.String() != completed.Text {
		t.Errorf("message started %+v completed %+v deltas %q", started, completed, deltas.String())
	}
	if !user {
		t.Errorf("no user_message item for the prompt; seen %s", kinds(r.seen))
	}
	items, err := r.s.Messages(ctxT(t))
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	if len(items) != 2 || items[0].Type != agent.ItemUserMessage || items[0].Text != "SAY hello from the fake" || items[1].Type != agent.ItemMessage || items[1].Text != "hello from the fake" {
		t.Errorf("Messages %+v", items)
	}
	if err := r.s.Prompt(ctxT(t), agent.Prompt{Text: "SAY second"}); err != nil {
		t.Fatalf("second prompt: %v", err)
	}
	if err := r.s.Prompt(ctxT(t), agent.Prompt{Text: "SAY third"}); !errors.Is(err, agent.ErrTurnInProgress) {
		t.Errorf("prompt during a turn: %v, want ErrTurnInProgress", err)
	}
	if end := r.turnEnd(); end.Turn.Text != "second" {
		t.Errorf("second turn %+v", end.Turn)
	}
	if err := r.s.Steer(ctxT(t), agent.Prompt{Text: "x"}); !errors.Is(err, agent.ErrUnsupported) {
		t.Errorf("Steer: %v", err)
	}
	if err := r.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	r.rest()
	last := r.seen[len(r.seen)-1]
	if last.Kind != agent.KindSessionEnded || last.Session.Reason != "closed" {
		t.Errorf("last event %+v", last)
	}
	waitNoProcs(t, "HOME="+env.home)
}

var _ = json.Marshal
var _ = os.Stat
var _ = filepath.Join
var _ = syscall.SIGKILL
