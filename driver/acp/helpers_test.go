package acp_test

import (
	"context"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
)

// waitTimeout bounds every wait for an event from a real agent.
const waitTimeout = 90 * time.Second

// events reads a session's events into a channel until it ends.
func events(t *testing.T, s agent.Session) <-chan agent.Event {
	t.Helper()
	ch := make(chan agent.Event, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for e, err := range s.Events(ctx) {
			if err != nil {
				return
			}
			if verr := e.Validate(); verr != nil {
				t.Errorf("invalid event %+v: %v", e, verr)
			}
			ch <- e
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch
}

// until collects events up to and including the first that ok accepts.
func until(t *testing.T, ch <-chan agent.Event, ok func(agent.Event) bool) []agent.Event {
	t.Helper()
	var seen []agent.Event
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case e, open := <-ch:
			if !open {
				t.Fatalf("events ended; seen %s", kinds(seen))
			}
			seen = append(seen, e)
			if ok(e) {
				return seen
			}
		case <-timer.C:
			t.Fatalf("no such event in %s; seen %s", waitTimeout, kinds(seen))
		}
	}
}

func kinds(events []agent.Event) string {
	s := ""
	for _, e := range events {
		s += string(e.Kind)
		if e.Item != nil {
			s += "(" + string(e.Item.Type) + ":" + string(e.Item.Status) + ")"
		}
		s += " "
	}
	return s
}

func turnDone(e agent.Event) bool { return e.Kind == agent.KindTurnCompleted }

func isApproval(e agent.Event) bool { return e.Kind == agent.KindApprovalRequested }

// completed are the completed items of type typ among events.
func completed(events []agent.Event, typ agent.ItemType) []agent.Item {
	var out []agent.Item
	for _, e := range events {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == typ {
			out = append(out, *e.Item)
		}
	}
	return out
}

// text is the completed messages' text.
func text(events []agent.Event) string {
	s := ""
	for _, it := range completed(events, agent.ItemMessage) {
		s += it.Text
	}
	return s
}

func prompt(t *testing.T, s agent.Session, text string) {
	t.Helper()
	if err := s.Prompt(t.Context(), agent.Prompt{Text: text}); err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
}

func resolve(t *testing.T, s agent.Session, id string, d agent.Decision) {
	t.Helper()
	if err := s.Resolve(t.Context(), agent.Resolution{ApprovalID: id, Decision: d, Scope: agent.ScopeOnce}); err != nil {
		t.Fatalf("resolve %s: %v", id, err)
	}
}
