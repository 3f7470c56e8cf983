package mcpprobe

import (
	"context"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
)

// eventWait bounds the wait for a session's next event.
const eventWait = 90 * time.Second

// Session is an agent session under test: its events are read from its
// start, and approvals are answered with Answer.
type Session struct {
	Session agent.Session
	Answer  agent.Decision
	// Seen are the events so far.
	Seen   []agent.Event
	events chan agent.Event
}

// Start starts a session of d and reads its events until the test ends.
func Start(t testing.TB, d agent.Driver, req agent.StartRequest) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	s, err := d.Start(ctx, req)
	if err != nil {
		cancel()
		t.Fatalf("start: %v", err)
	}
	w := &Session{Session: s, Answer: agent.Allow, events: make(chan agent.Event, 4096)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e, err := range s.Events(ctx) {
			if err != nil {
				return
			}
			select {
			case w.events <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() { _ = s.Close(); cancel(); <-done })
	return w
}

// Turn prompts and returns the turn's turn.completed, answering the
// approvals on the way.
func (w *Session) Turn(t testing.TB, prompt string) agent.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	if err := w.Session.Prompt(ctx, agent.Prompt{Text: prompt}); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	for {
		select {
		case e := <-w.events:
			w.Seen = append(w.Seen, e)
			if e.Kind == agent.KindApprovalRequested {
				r := agent.Resolution{ApprovalID: e.Approval.ID, Decision: w.Answer, Reason: "the test's answer"}
				if err := w.Session.Resolve(ctx, r); err != nil {
					t.Fatalf("resolve: %v", err)
				}
			}
			if e.Kind == agent.KindTurnCompleted {
				return e
			}
		case <-time.After(eventWait):
			t.Fatalf("no event for %s", eventWait)
			return agent.Event{}
		}
	}
}

// Prompt is a prompt that has the fake model call the tool, named as the
// agent names it, with token.
func Prompt(toolName, token string) string {
	return `USE_TOOL ` + toolName + ` {"token":"` + token + `"}`
}
