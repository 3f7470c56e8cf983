package sessions_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

// panicky is the mock whose sessions' events panic on a turn's first
// item: a bug in a driver's mapping, say.
type panicky struct{ agent.Driver }

func (d panicky) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	s, err := d.Driver.Start(ctx, req)
	return panickySession{s}, err
}

type panickySession struct{ agent.Session }

func (s panickySession) Events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for e, err := range s.Session.Events(ctx) {
			if e.Kind == agent.KindItemStarted {
				panic("a driver bug")
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

// A panic while a session's events are relayed ends that session, failed
// with internal_error and its turn closed, while the runner and its other
// sessions go on.
func TestPanicEndsOnlyItsSession(t *testing.T) {
	m := runnertest.Manager(t, map[string]agent.Driver{
		"mock":    mock.New(mock.Config{}),
		"panicky": panicky{mock.New(mock.Config{})},
	}, eventlog.Options{})
	bad, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "panicky", WorkspaceID: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	events := follow(t, m, bad.ID, 0)
	until(t, events, agent.KindSessionStarted, &seen)
	if err := m.Prompt(ctx(t), bad.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	turn := until(t, events, agent.KindTurnCompleted, &seen)
	end := until(t, events, agent.KindSessionEnded, &seen)
	if turn.Turn.Status != agent.TurnFailed || turn.Error == nil || turn.Error.Code != agent.ErrorInternal ||
		end.Error == nil || end.Error.Code != agent.ErrorInternal {
		t.Fatalf("the panicking session ended with %+v / %+v", turn, end)
	}
	// The state follows the session.ended the pump logged.
	for deadline := time.Now().Add(10 * time.Second); mustGet(t, m, bad.ID).State != sessions.StateEnded; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("its state: %s", mustGet(t, m, bad.ID).State)
		}
	}

	good, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "mock", WorkspaceID: "good"})
	if err != nil {
		t.Fatal(err)
	}
	seen = nil
	goodEvents := follow(t, m, good.ID, 0)
	until(t, goodEvents, agent.KindSessionStarted, &seen)
	if err := m.Prompt(ctx(t), good.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if done := until(t, goodEvents, agent.KindTurnCompleted, &seen); done.Turn.Status != agent.TurnCompleted {
		t.Fatalf("another session after the panic: %+v", done)
	}
}
