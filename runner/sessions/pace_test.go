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

// flooder is the mock whose sessions, after each turn's start, write n
// native events as fast as the session takes them.
type flooder struct {
	agent.Driver
	n int
}

func (d flooder) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	s, err := d.Driver.Start(ctx, req)
	return floodSession{s, d.n}, err
}

type floodSession struct {
	agent.Session
	n int
}

func (s floodSession) Events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for e, err := range s.Session.Events(ctx) {
			if !yield(e, err) {
				return
			}
			if e.Kind != agent.KindTurnStarted {
				continue
			}
			for range s.n {
				if !yield(agent.Event{Kind: agent.KindNative, SessionID: e.SessionID, TurnID: e.TurnID, Time: e.Time,
					Raw: []byte(`{"type":"stream_event"}`), RawChecked: true}, nil) {
					return
				}
			}
		}
	}
}

// lastSeqReaches waits until the session has logged at least seq.
func lastSeqReaches(t *testing.T, m *sessions.Manager, id string, seq uint64) uint64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := m.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if info.LastSeq >= seq {
			return info.LastSeq
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session logged %d events, never %d", info.LastSeq, seq)
		}
		time.Sleep(time.Millisecond)
	}
}

// A pacer holds its session's agent back: the log never runs more than a
// window ahead of what the pacer has sent on, whatever the agent writes;
// each step the pacer takes lets as much more in, and once it stops
// pacing the agent runs free to the turn's end.
func TestPacerHoldsTheAgentBack(t *testing.T) {
	const flood = 5000
	m := runnertest.Manager(t, map[string]agent.Driver{"flood": flooder{mock.New(mock.Config{}), flood}}, eventlog.Options{})
	s, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "flood", WorkspaceID: "flood"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	events := follow(t, m, s.ID, 0)
	until(t, events, agent.KindSessionStarted, &seen)
	p, err := m.Pace(s.ID, uint64(len(seen)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := m.Prompt(ctx(t), s.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	// The window: what the pacer may be behind, plus the one batch the
	// session takes once it is within it.
	const window, slack = 192, 64
	sent := uint64(len(seen))
	for range 3 {
		at := lastSeqReaches(t, m, s.ID, sent+window)
		if at > sent+window+slack {
			t.Fatalf("the pacer sent on %d events and the log took %d", sent, at)
		}
		sent += 500
		p.Sent(sent)
	}
	p.Close()
	end := until(t, events, agent.KindTurnCompleted, &seen)
	if end.Seq < flood {
		t.Fatalf("the turn ended at seq %d, before the flood of %d", end.Seq, flood)
	}
}

// A pacer that never moves holds nothing up once the session closes.
func TestClosingIsNotHeldByAPacer(t *testing.T) {
	m := runnertest.Manager(t, map[string]agent.Driver{"flood": flooder{mock.New(mock.Config{}), 5000}}, eventlog.Options{})
	s, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "flood", WorkspaceID: "flood"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	events := follow(t, m, s.ID, 0)
	until(t, events, agent.KindSessionStarted, &seen)
	p, err := m.Pace(s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := m.Prompt(ctx(t), s.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	lastSeqReaches(t, m, s.ID, 100)
	if err := m.Close(ctx(t), s.ID); err != nil {
		t.Fatal(err)
	}
	until(t, events, agent.KindSessionEnded, &seen)
}
