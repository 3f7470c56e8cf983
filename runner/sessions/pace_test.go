package sessions_test

import (
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

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
	m := runnertest.Manager(t, map[string]agent.Driver{"flood": newNativeWriter(flood, true, `{"type":"stream_event"}`)}, eventlog.Options{})
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
	m := runnertest.Manager(t, map[string]agent.Driver{"flood": newNativeWriter(5000, true, `{"type":"stream_event"}`)}, eventlog.Options{})
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

// A session's state moves with its log: while a pacer holds back the
// event that ends a turn, the session is still running, and once it is
// idle its LastSeq holds the turn's end.
func TestStateFollowsTheLog(t *testing.T) {
	const window = 192 // a pacer's
	m := runnertest.Manager(t, map[string]agent.Driver{"flood": newNativeWriter(300, true, `{"type":"stream_event"}`)}, eventlog.Options{})
	s, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "flood", WorkspaceID: "flood"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	events := follow(t, m, s.ID, 0)
	until(t, events, agent.KindSessionStarted, &seen)
	lastSeq := func() sessions.Info {
		t.Helper()
		info, err := m.Get(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	// A first turn, unpaced, says how many events a turn logs.
	before := lastSeq().LastSeq
	if err := m.Prompt(ctx(t), s.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	end := uint64(until(t, events, agent.KindTurnCompleted, &seen).Seq)
	if got := lastSeqReaches(t, m, s.ID, end); got != end {
		t.Fatalf("the log ran on to %d after the turn's end at %d", got, end)
	}
	turn := end - before
	// The second turn's end is the first event its pacer holds back.
	ends := end + turn
	p, err := m.Pace(s.ID, ends-2-window)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := m.Prompt(ctx(t), s.ID, agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	lastSeqReaches(t, m, s.ID, ends-1)
	time.Sleep(200 * time.Millisecond) // the agent has ended its turn by now
	if info := lastSeq(); info.LastSeq != ends-1 || info.State != sessions.StateRunning {
		t.Fatalf("held before the turn's end at seq %d, the session is %s at seq %d, want running at %d",
			ends, info.State, info.LastSeq, ends-1)
	}
	p.Close()
	if got := uint64(until(t, events, agent.KindTurnCompleted, &seen).Seq); got != ends {
		t.Fatalf("the second turn ended at seq %d, want %d", got, ends)
	}
	if info := lastSeq(); info.State != sessions.StateIdle || info.LastSeq < ends {
		t.Fatalf("after the turn's end at seq %d: %s at seq %d", ends, info.State, info.LastSeq)
	}
}
