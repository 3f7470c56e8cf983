package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/claudecli"
)

// Claude Code through the agent interface, with the real CLI, locally and
// on a sandboxed runner: a text turn, a shell command approved (it ran)
// and denied (it did not), an interrupt, and a resume.
func TestRealCLICanonicalClaude(t *testing.T) {
	timed(t)
	for name, tg := range map[string]func(t *testing.T) target{
		"Local":         localTarget,
		"RunnerSandbox": func(t *testing.T) target { return runnerTarget(startRunner(t, true)) },
	} {
		t.Run(name, func(t *testing.T) {
			opts, dir := tg(t).opts(t)
			d := &claudecli.Canonical{Base: opts}
			s := startWatched(t, d, agent.StartRequest{Workspace: dir})

			if got := s.turn(t, "SAY hello there"); got.Turn.Status != agent.TurnCompleted || got.Turn.Text != "hello there" {
				t.Fatalf("text turn ended %+v", got.Turn)
			}
			if msgs := s.items(agent.ItemMessage); len(msgs) == 0 || msgs[len(msgs)-1].Text != "hello there" {
				t.Fatalf("messages %+v", msgs)
			}

			s.answer = agent.Allow
			s.turn(t, bashPrompt("touch allowed.txt"))
			if _, err := os.Stat(filepath.Join(dir, "allowed.txt")); err != nil {
				t.Fatalf("the approved command did not run: %v", err)
			}
			s.answer = agent.Deny
			s.turn(t, bashPrompt("touch denied.txt"))
			if _, err := os.Stat(filepath.Join(dir, "denied.txt")); err == nil {
				t.Fatal("the denied command ran")
			}
			cmds := s.items(agent.ItemCommand)
			if len(cmds) != 2 || cmds[0].Status != agent.ItemDone || cmds[1].Status != agent.ItemDeclined ||
				cmds[0].Command.Command != "touch allowed.txt" {
				t.Fatalf("commands %+v", cmds)
			}
			if n := s.count(agent.KindApprovalRequested); n != 2 || s.count(agent.KindApprovalResolved) != 2 {
				t.Fatalf("%d approvals asked, %d resolved", n, s.count(agent.KindApprovalResolved))
			}

			if got := s.interruptedTurn(t); got.Turn.Status != agent.TurnInterrupted {
				t.Fatalf("interrupted turn ended %+v", got.Turn)
			}
			id := s.session.NativeID()
			if err := s.session.Close(); err != nil {
				t.Fatal(err)
			}
			r := startWatched(t, d, agent.StartRequest{Workspace: dir, Resume: id})
			if got := r.turn(t, "SAY resumed"); got.Turn.Text != "resumed" || r.session.NativeID() != id {
				t.Fatalf("resume: %+v in %s, want %s", got.Turn, r.session.NativeID(), id)
			}
			// Locally, the resumed session's messages begin with the
			// conversation's past, read from the CLI's own store (through
			// protocol v1 the store is the runner's: the sessions API's
			// journey checks it there).
			items, err := r.session.Messages(testCtx(t))
			if name == "Local" && (err != nil || len(items) < 2 || items[0].Text != "SAY hello there" || items[len(items)-1].Text != "resumed") {
				t.Fatalf("messages after the resume: %v %+v", err, items)
			}
		})
	}
}

// watchedSession collects a session's events and answers its approvals.
type watchedSession struct {
	session agent.Session
	events  chan agent.Event
	seen    []agent.Event
	answer  agent.Decision
}

func startWatched(t *testing.T, d agent.Driver, req agent.StartRequest) *watchedSession {
	t.Helper()
	ctx := testCtx(t)
	s, err := d.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	w := &watchedSession{session: s, events: make(chan agent.Event, 1024), answer: agent.Deny}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e, err := range s.Events(ctx) {
			if err != nil {
				return
			}
			w.events <- e
		}
	}()
	t.Cleanup(func() { _ = s.Close(); <-done })
	return w
}

// next waits for the next event, answering approvals on the way.
func (w *watchedSession) next(t *testing.T) agent.Event {
	t.Helper()
	select {
	case e := <-w.events:
		if err := e.Validate(); err != nil {
			t.Fatalf("%v: %+v", err, e)
		}
		w.seen = append(w.seen, e)
		if e.Kind == agent.KindApprovalRequested {
			r := agent.Resolution{ApprovalID: e.Approval.ID, Decision: w.answer, Reason: "test says no"}
			if err := w.session.Resolve(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
		return e
	case <-time.After(60 * time.Second):
		t.Fatal("no event for 60 s")
	}
	return agent.Event{}
}

func (w *watchedSession) until(t *testing.T, k agent.Kind) agent.Event {
	t.Helper()
	for {
		if e := w.next(t); e.Kind == k {
			return e
		}
	}
}

func (w *watchedSession) turn(t *testing.T, prompt string) agent.Event {
	t.Helper()
	if err := w.session.Prompt(testCtx(t), agent.Prompt{Text: prompt}); err != nil {
		t.Fatal(err)
	}
	return w.until(t, agent.KindTurnCompleted)
}

func (w *watchedSession) interruptedTurn(t *testing.T) agent.Event {
	t.Helper()
	if err := w.session.Prompt(testCtx(t), agent.Prompt{Text: "SLOW"}); err != nil {
		t.Fatal(err)
	}
	w.until(t, agent.KindItemDelta)
	if err := w.session.Interrupt(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return w.until(t, agent.KindTurnCompleted)
}

func (w *watchedSession) items(typ agent.ItemType) []agent.Item {
	var out []agent.Item
	for _, e := range w.seen {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == typ {
			out = append(out, *e.Item)
		}
	}
	return out
}

func (w *watchedSession) count(k agent.Kind) int {
	n := 0
	for _, e := range w.seen {
		if e.Kind == k {
			n++
		}
	}
	return n
}
