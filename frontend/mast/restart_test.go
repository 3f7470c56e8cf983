package mast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakeorchestrator"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

// checkOnce holds the orchestrator's events of a session to: every
// canonical event up to lastSeq that makes a mast event arrived, no frame
// twice, timestamps strictly increasing.
func checkOnce(t *testing.T, c *core, v fakeorchestrator.View, sessionID string, lastSeq uint64) {
	t.Helper()
	seen := map[string]bool{}
	seqs := map[uint64]bool{}
	prev := ""
	for _, f := range v.Events() {
		ts := f["timestamp"].(string)
		if ts <= prev {
			t.Errorf("timestamp %s after %s", ts, prev)
		}
		prev = ts
		ev := f["event"].(map[string]any)
		if ev["sessionId"] != sessionID {
			continue
		}
		data, _ := json.Marshal(ev)
		if seen[string(data)] {
			t.Errorf("event twice: %s", data)
		}
		seen[string(data)] = true
		seqs[uint64(ev["data"].(map[string]any)["seq"].(float64))] = true
	}
	for _, seq := range framedSeqs(t, c, sessionID, lastSeq) {
		if !seqs[seq] {
			t.Errorf("canonical event %d of %d never reached the orchestrator", seq, lastSeq)
		}
	}
}

// framedSeqs are the seqs, up to lastSeq, of the session's logged events
// that make a mast event (a native line makes none).
func framedSeqs(t *testing.T, c *core, sessionID string, lastSeq uint64) []uint64 {
	t.Helper()
	ctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	p := newProjector(sessionID)
	var out []uint64
	for e, err := range c.m.Events(ctx, sessionID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if len(p.project(e, 1)) > 0 {
			out = append(out, uint64(e.Seq))
		}
		if uint64(e.Seq) >= lastSeq {
			break
		}
	}
	return out
}

func allArrived(v fakeorchestrator.View, sessionID string, lastSeq uint64) bool {
	for _, ev := range eventsOf(v, sessionID) {
		if uint64(ev["data"].(map[string]any)["seq"].(float64)) == lastSeq {
			return true
		}
	}
	return false
}

// The orchestrator goes away in the middle of a turn; the turn goes on
// and is logged; the orchestrator comes back with its store, the daemon
// reconnects, answers sync_request with the messages it missed, and
// replays the events after its timestamp: nothing lost, nothing twice.
func TestOrchestratorRestartMidTurn(t *testing.T) {
	forEachWindow(t, testOrchestratorRestartMidTurn)
}

// forEachWindow runs a test with the daemon's default window, with none
// (every reconnect folds the log) and with one of four frames (a
// reconnect folds the log, then goes on from the window).
func forEachWindow(t *testing.T, test func(t *testing.T, replay func(*Config))) {
	for name, frames := range map[string]int{"window": 0, "no-window": -1, "tiny-window": 4} {
		t.Run(name, func(t *testing.T) { test(t, func(cfg *Config) { cfg.ReplayFrames = frames }) })
	}
}

func testOrchestratorRestartMidTurn(t *testing.T, replay func(*Config)) {
	g := &gate{open: true}
	c := openCore(t, t.TempDir(), g)
	o := startOrchestrator(t, fakeorchestrator.Options{Store: true})
	startDaemon(t, c, o, replay)
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}
	var s Session
	mustOK(t, command(t, o, map[string]any{"type": "create_session", "agentType": "mock"}), &s)
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return len(eventsOf(v, s.ID)) > 0 }); err != nil {
		t.Fatal(err)
	}
	g.set(false)
	mustOK(t, command(t, o, map[string]any{"type": "send_prompt", "sessionId": s.ID, "text": "tell me a story"}), nil)
	var started int
	o.Read(func(v fakeorchestrator.View) { started = len(eventsOf(v, s.ID)) })
	g.step(t, 6)
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return len(eventsOf(v, s.ID)) >= started+6 }); err != nil {
		o.Read(func(v fakeorchestrator.View) {
			t.Logf("%d then %d events: %v", started, len(eventsOf(v, s.ID)), eventsOf(v, s.ID))
		})
		t.Fatal(err)
	}
	o.Stop()
	g.set(true)
	// Its end logged: the state is idle a moment before, and LastSeq
	// may be short of it then.
	waitLogged(t, c, s.ID, 1)
	info, err := c.m.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var before int
	o.Read(func(v fakeorchestrator.View) {
		before = len(eventsOf(v, s.ID))
		if allArrived(v, s.ID, info.LastSeq) {
			t.Fatal("the whole turn arrived before the orchestrator stopped: the test proves nothing")
		}
	})
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		return len(v.SyncResponses()) == 2 && allArrived(v, s.ID, info.LastSeq)
	}); err != nil {
		t.Fatal(err)
	}
	o.Read(func(v fakeorchestrator.View) {
		checkOnce(t, c, v, s.ID, info.LastSeq)
		if after := len(eventsOf(v, s.ID)); after <= before {
			t.Errorf("no event replayed (%d then %d)", before, after)
		}
		sync := v.SyncResponses()[1]["sessions"].([]any)
		if len(sync) != 1 || sync[0].(map[string]any)["id"] != s.ID {
			t.Fatalf("sync_response sessions %v", sync)
		}
		msgs := sync[0].(map[string]any)["messages"].([]any)
		completed := 0
		for _, m := range msgs {
			if m.(map[string]any)["completed"] == true {
				completed++
			}
		}
		if len(msgs) == 0 || completed != len(msgs) {
			t.Errorf("sync_response messages %v: want the turn's messages, completed", msgs)
		}
		for _, m := range v.Messages(s.ID) {
			if !m.Completed {
				t.Errorf("cached message %s not completed", m.ID)
			}
		}
	})
}

// The daemon stops while a permission waits; started again on the same
// data, it still has the session, the orchestrator learns the
// permission's end (denied: its agent went with the daemon), and a late
// approval is an error, not an "ok" for nothing. With a store the
// orchestrator's sync says where to resume; without one the daemon's own
// saved position does.
func TestDaemonRestartPendingApproval(t *testing.T) {
	forEachWindow(t, testDaemonRestartPendingApproval)
}

func testDaemonRestartPendingApproval(t *testing.T, replay func(*Config)) {
	for _, store := range []bool{true, false} {
		t.Run(map[bool]string{true: "sync", false: "cursor"}[store], func(t *testing.T) {
			dir := t.TempDir()
			cursorFile := filepath.Join(dir, "mast-cursor.json")
			withCursor := func(cfg *Config) { cfg.CursorFile = cursorFile; replay(cfg) }
			c1 := openCore(t, dir, nil)
			o := startOrchestrator(t, fakeorchestrator.Options{Store: store})
			r1 := startDaemon(t, c1, o, withCursor)
			if err := o.Wait(ctxFor(t), connected); err != nil {
				t.Fatal(err)
			}
			var s Session
			mustOK(t, command(t, o, map[string]any{"type": "create_session"}), &s)
			mustOK(t, command(t, o, map[string]any{"type": "send_prompt", "sessionId": s.ID, "text": "REQUEST_APPROVAL"}), nil)
			pid := permissionID(t, o, s.ID)
			if err := r1.stop(t); err != nil {
				t.Fatal(err)
			}
			c1.close()

			c2 := openCore(t, dir, nil)
			startDaemon(t, c2, o, withCursor)
			info, err := c2.m.Get(s.ID)
			if err != nil {
				t.Fatalf("the session did not survive the restart: %v", err)
			}
			if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
				return v.Connects() == 2 && allArrived(v, s.ID, info.LastSeq)
			}); err != nil {
				t.Fatal(err)
			}
			o.Read(func(v fakeorchestrator.View) {
				checkOnce(t, c2, v, s.ID, info.LastSeq)
				if !hasEvent(v, s.ID, EventPermissionUpdated, func(d map[string]any) bool {
					return d["permissionId"] == pid && d["status"] == "denied"
				}) {
					t.Error("the orchestrator never learned the pending permission's end")
				}
				if !hasEvent(v, s.ID, EventSessionUpdated, func(d map[string]any) bool {
					return d["session"].(map[string]any)["status"] == "ended"
				}) {
					t.Error("the orchestrator never learned the session ended")
				}
			})
			mustFail(t, command(t, o, map[string]any{"type": "approve_permission", "sessionId": s.ID, "permissionId": pid}), "already resolved")
			// This core's mock has no conversation of the last one's to resume
			// (TestDaemonRestartResumesSession has one that does).
			mustFail(t, command(t, o, map[string]any{"type": "send_prompt", "sessionId": s.ID, "text": "still there?"}), "could not be resumed")
			var listed []Session
			mustOK(t, command(t, o, map[string]any{"type": "list_sessions"}), &listed)
			if len(listed) != 1 || listed[0].ID != s.ID || listed[0].State != "ended" {
				t.Fatalf("list_sessions after the restart: %+v", listed)
			}
			var msgs []Message
			mustOK(t, command(t, o, map[string]any{"type": "get_messages", "sessionId": s.ID}), &msgs)
			if len(msgs) == 0 || msgs[0].Role != "user" {
				t.Fatalf("get_messages after the restart: %+v", msgs)
			}
		})
	}
}

// When the log's retention has dropped the feed's beginning, the daemon
// still connects once and streams what is left, instead of failing on
// the missing start and reconnecting forever.
func TestFeedRetention(t *testing.T) {
	c := openCore(t, t.TempDir(), nil, eventlog.Options{MaxEventsPerSession: 100, MaxFeedEvents: 100})
	ctx := ctxFor(t)
	info, err := c.m.Create(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil { // session.started first: until then a turn's end cannot be told
		if now, _ := c.m.Get(info.ID); now.LastSeq > 0 {
			break
		}
		<-timeAfter(1)
	}
	// More events than retention keeps, in turns a reader of this turn's
	// events keeps up with (a turn logs about 30).
	for range 8 {
		before, _ := c.m.Get(info.ID)
		// The state turns idle a moment before turn.completed is logged:
		// the last turn may still be ending.
		err := c.m.Prompt(ctx, info.ID, agent.Prompt{Text: "again"})
		for errors.Is(err, agent.ErrTurnInProgress) {
			<-timeAfter(1)
			err = c.m.Prompt(ctx, info.ID, agent.Prompt{Text: "again"})
		}
		if err != nil {
			t.Fatal(err)
		}
		// This turn's end: the turn.completed of the turn started after
		// the prompt (the last turn's may come first).
		turn := ""
		for e, err := range c.m.Events(ctx, info.ID, before.LastSeq) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind == agent.KindTurnStarted && turn == "" {
				turn = e.TurnID
			}
			if e.Kind == agent.KindTurnCompleted && turn != "" && e.TurnID == turn {
				break
			}
		}
	}
	// The log commits in the background, and retention applies as it does.
	if err := c.log.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if first, err := c.m.FeedStart(); err != nil || first <= 1 {
		t.Fatalf("the feed kept its beginning (first %d, %v): the test proves nothing", first, err)
	}
	last, _ := c.m.Get(info.ID)
	o := startOrchestrator(t, fakeorchestrator.Options{Store: true})
	startDaemon(t, c, o, nil)
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool {
		return len(v.SyncResponses()) >= 1 && allArrived(v, info.ID, last.LastSeq)
	}); err != nil {
		var arrived []string
		o.Read(func(v fakeorchestrator.View) {
			for _, ev := range eventsOf(v, info.ID) {
				arrived = append(arrived, fmt.Sprint(ev["type"], "@", ev["data"].(map[string]any)["seq"]))
			}
			t.Errorf("%v: %d connections, %d sync responses, waiting for seq %d; arrived: %v", err, v.Connects(), len(v.SyncResponses()), last.LastSeq, arrived)
		})
		var logged []string
		rctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		for e, err := range c.m.Events(rctx, info.ID, 0) {
			if err != nil {
				break
			}
			logged = append(logged, fmt.Sprint(e.Kind, "@", e.Seq))
			if uint64(e.Seq) >= last.LastSeq {
				break
			}
		}
		t.Fatalf("the session's log up to it: %v", logged)
	}
	<-timeAfter(100)
	o.Read(func(v fakeorchestrator.View) {
		if v.Connects() != 1 {
			t.Errorf("%d connections, want 1", v.Connects())
		}
	})
}
