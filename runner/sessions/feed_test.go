package sessions_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

// Sessions logging at once, more events than the feed keeps in memory: a
// reader following live, one starting at the beginning afterwards (the
// log, then memory) and one starting near the end each see every position
// once, in order, with the same events.
func TestFeedFromMemoryAndLog(t *testing.T) {
	m := runnertest.Manager(t, map[string]agent.Driver{"mock": mock.New(mock.Config{})}, eventlog.Options{})
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	live := make(chan []sessions.FeedEvent, 1)
	liveCtx, stopLive := context.WithCancel(c)
	defer stopLive()
	go func() {
		var got []sessions.FeedEvent
		for fe, err := range m.Feed(liveCtx, 0) {
			if err != nil {
				break
			}
			got = append(got, fe)
		}
		live <- got
	}()

	var wg sync.WaitGroup
	for _, w := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := m.Create(c, sessions.CreateRequest{Agent: "mock", WorkspaceID: w})
			if err != nil {
				t.Error(err)
				return
			}
			for mustGet(t, m, info.ID).LastSeq == 0 {
				time.Sleep(time.Millisecond)
			}
			for range 150 {
				before := mustGet(t, m, info.ID).LastSeq
				// The state turns idle a moment before turn.completed is
				// logged: the last turn may still be ending.
				err := m.Prompt(c, info.ID, agent.Prompt{Text: "again"})
				for errors.Is(err, agent.ErrTurnInProgress) {
					time.Sleep(100 * time.Microsecond)
					err = m.Prompt(c, info.ID, agent.Prompt{Text: "again"})
				}
				if err != nil {
					t.Error(err)
					return
				}
				for s := mustGet(t, m, info.ID); s.State != sessions.StateIdle || s.LastSeq <= before; s = mustGet(t, m, info.ID) {
					time.Sleep(100 * time.Microsecond)
				}
			}
		}()
	}
	wg.Wait()
	end, err := m.FeedEnd()
	if err != nil || end < 3*4096 {
		t.Fatalf("feed end %d (%v): fewer events than the feed keeps in memory twice", end, err)
	}
	read := func(after uint64) []sessions.FeedEvent {
		rctx, stop := context.WithCancel(c)
		defer stop()
		var got []sessions.FeedEvent
		for fe, err := range m.Feed(rctx, after) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fe)
			if fe.Pos == end {
				break
			}
		}
		return got
	}
	all := read(0)
	check := func(name string, got []sessions.FeedEvent, from uint64) {
		t.Helper()
		if uint64(len(got)) != end-from {
			t.Fatalf("%s: %d events, want %d", name, len(got), end-from)
		}
		for i, fe := range got {
			want := all[from+uint64(i)]
			if fe.Pos != from+uint64(i)+1 || fe.Event.SessionID != want.Event.SessionID || fe.Event.Seq != want.Event.Seq ||
				fe.Event.Kind != want.Event.Kind || !fe.Event.Time.Equal(want.Event.Time) {
				t.Fatalf("%s: event %d is %d %s/%d %s, want %d %s/%d %s", name, i, fe.Pos, fe.Event.SessionID, fe.Event.Seq, fe.Event.Kind,
					want.Pos, want.Event.SessionID, want.Event.Seq, want.Event.Kind)
			}
		}
	}
	check("from the start", all, 0)
	next := map[string]int64{}
	for _, fe := range all {
		if fe.Event.Seq != next[fe.Event.SessionID]+1 {
			t.Fatalf("%s: seq %d after %d", fe.Event.SessionID, fe.Event.Seq, next[fe.Event.SessionID])
		}
		next[fe.Event.SessionID] = fe.Event.Seq
	}
	check("near the end", read(end-10), end-10)
	stopLive()
	got := <-live
	if uint64(len(got)) > end {
		got = got[:end]
	}
	check("live", got, 0)
}

func mustGet(t *testing.T, m *sessions.Manager, id string) sessions.Info {
	t.Helper()
	info, err := m.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return info
}
