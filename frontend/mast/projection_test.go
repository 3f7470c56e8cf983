package mast

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakeorchestrator"
	"github.com/tetherhq/tether/runner/sessions"
)

// countingCore counts the events its readers take from the feed and the
// sessions' logs: what a reconnect costs.
type countingCore struct {
	sessions.Core
	read atomic.Int64
}

func (c *countingCore) Feed(ctx context.Context, after uint64) iter.Seq2[sessions.FeedEvent, error] {
	return counted(c.Core.Feed(ctx, after), &c.read)
}

func (c *countingCore) Events(ctx context.Context, id string, after uint64) iter.Seq2[agent.Event, error] {
	return counted(c.Core.Events(ctx, id, after), &c.read)
}

func counted[T any](seq iter.Seq2[T, error], n *atomic.Int64) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for v, err := range seq {
			if err == nil {
				n.Add(1)
			}
			if !yield(v, err) {
				return
			}
		}
	}
}

// newSession starts a mock session and waits for its session.started.
func newSession(t *testing.T, c *core, workspace string) string {
	t.Helper()
	ctx := ctxFor(t)
	info, err := c.m.Create(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: workspace})
	if err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		if now, _ := c.m.Get(info.ID); now.LastSeq > 0 {
			return info.ID
		}
		<-timeAfter(1)
	}
	t.Fatal("the session did not start")
	return ""
}

// runTurns runs n mock turns of the session, each to its turn.completed,
// and returns the session's last seq.
func runTurns(t *testing.T, c *core, id string, n int) uint64 {
	t.Helper()
	ctx := ctxFor(t)
	for range n {
		before, err := c.m.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		err = c.m.Prompt(ctx, id, agent.Prompt{Text: "again"})
		for errors.Is(err, agent.ErrTurnInProgress) { // the last turn is still winding down
			<-timeAfter(1)
			err = c.m.Prompt(ctx, id, agent.Prompt{Text: "again"})
		}
		if err != nil {
			t.Fatal(err)
		}
		turn := ""
		for e, err := range c.m.Events(ctx, id, before.LastSeq) {
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
	info, err := c.m.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return info.LastSeq
}

// A reconnect after many logged events and a few missed ones reads only
// the missed ones (once, as they are logged): not the history, and not
// twice.
func TestReconnectReadsOnlyWhatWasMissed(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	counting := &countingCore{Core: c.m}
	o := startOrchestrator(t, fakeorchestrator.Options{Store: true})
	startDaemon(t, c, o, func(cfg *Config) { cfg.Service.Sessions = counting })
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}
	id := newSession(t, c, "history")
	seen := runTurns(t, c, id, 60)
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return allArrived(v, id, seen) }); err != nil {
		t.Fatal(err)
	}
	o.Stop()
	before := counting.read.Load()
	last := runTurns(t, c, id, 2)
	missed := int64(last - seen)
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		return len(v.SyncResponses()) == 2 && allArrived(v, id, last)
	}); err != nil {
		t.Fatal(err)
	}
	reads := counting.read.Load() - before
	t.Logf("%d events logged, %d missed; the reconnect read %d", last, missed, reads)
	if reads > missed {
		t.Errorf("the daemon read %d events for a reconnect that missed %d of %d", reads, missed, last)
	}
	o.Read(func(v fakeorchestrator.View) {
		checkOnce(t, c, v, id, last)
		sync := v.SyncResponses()[1]["sessions"].([]any)
		if len(sync) != 1 || len(sync[0].(map[string]any)["messages"].([]any)) == 0 {
			t.Errorf("sync_response %v: want the missed turns' messages", sync)
		}
	})
}

// An orchestrator away for longer than the window reaches back gets what
// it missed from a fold of the log: nothing lost, nothing twice.
func TestReconnectOlderThanTheWindow(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	counting := &countingCore{Core: c.m}
	o := startOrchestrator(t, fakeorchestrator.Options{Store: true})
	startDaemon(t, c, o, func(cfg *Config) { cfg.Service.Sessions, cfg.ReplayFrames = counting, 8 })
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}
	id := newSession(t, c, "window")
	seen := runTurns(t, c, id, 3)
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return allArrived(v, id, seen) }); err != nil {
		t.Fatal(err)
	}
	o.Stop()
	last := runTurns(t, c, id, 3)
	before := counting.read.Load()
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		return len(v.SyncResponses()) == 2 && allArrived(v, id, last)
	}); err != nil {
		t.Fatal(err)
	}
	if reads := counting.read.Load() - before; reads < int64(last) {
		t.Errorf("the reconnect read %d events of %d: it did not fold the log", reads, last)
	}
	o.Read(func(v fakeorchestrator.View) {
		checkOnce(t, c, v, id, last)
		sync := v.SyncResponses()[1]["sessions"].([]any)
		if len(sync) != 1 || len(sync[0].(map[string]any)["messages"].([]any)) == 0 {
			t.Errorf("sync_response %v: want the missed turns' messages", sync)
		}
	})
}

// runProjection runs a projection over c until the test ends.
func runProjection(t *testing.T, svc *Service, frames int) *projection {
	t.Helper()
	p := newProjection(svc, frames, DefaultReplayBytes, time.After, svc.logger())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// caughtUp waits until p has folded the feed up to its end.
func caughtUp(t *testing.T, c *core, p *projection) {
	t.Helper()
	end, err := c.m.FeedEnd()
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	for {
		p.mu.Lock()
		folded, woken := p.folded, p.woken
		p.mu.Unlock()
		if folded >= end {
			return
		}
		select {
		case <-woken:
		case <-ctx.Done():
			t.Fatalf("the projection folded up to %d of %d", folded, end)
		}
	}
}

// The projection's sync answers what a fold of the whole log answers,
// for every timestamp inside its window, with sessions of every state: one
// ended, one idle, one waiting on a permission.
func TestProjectionSyncIsTheFoldsSync(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	svc := &Service{Sessions: c.m}
	p := runProjection(t, svc, 64)
	ended := newSession(t, c, "ended")
	runTurns(t, c, ended, 2)
	if err := c.m.Close(ctxFor(t), ended); err != nil {
		t.Fatal(err)
	}
	idle := newSession(t, c, "idle")
	runTurns(t, c, idle, 3)
	waiting := newSession(t, c, "waiting")
	if err := c.m.Prompt(ctxFor(t), waiting, agent.Prompt{Text: "REQUEST_APPROVAL"}); err != nil {
		t.Fatal(err)
	}
	waitPending(t, c, waiting)
	caughtUp(t, c, p)
	p.mu.Lock()
	var sinces []int64
	for _, f := range p.frames[p.head:] {
		sinces = append(sinces, f.stamp-1, f.stamp)
	}
	p.mu.Unlock()
	if len(sinces) == 0 {
		t.Fatal("an empty window")
	}
	cached := []string{ended, idle, waiting, "ses_elsewhere"}
	for _, since := range sinces {
		req := Command{Type: frameSyncRequest, CachedSessionIDs: cached, LastEventTimestamp: Timestamp(time.UnixMicro(since))}
		got, _, ok, err := p.sync(ctxFor(t), req)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			p.mu.Lock()
			cover := p.coverStamp
			p.mu.Unlock()
			if since >= cover {
				t.Fatalf("since %d inside the window (from %d) not answered from it", since, cover)
			}
			continue
		}
		want, _, err := svc.sync(ctxFor(t), req)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
			t.Fatalf("since %d: the projection answers\n%s\nthe fold\n%s", since, g, w)
		}
	}
	// Older than the window: the caller folds.
	if _, _, ok, _ := p.sync(ctxFor(t), Command{Type: frameSyncRequest, LastEventTimestamp: epochTimestamp}); ok {
		t.Error("a sync from the epoch was answered from a window that does not reach back to it")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// waitPending waits until the session's approval.requested is logged:
// the approvals store learns of it before the log does, so a pending
// record alone does not say the log holds the turn so far.
func waitPending(t *testing.T, c *core, id string) {
	t.Helper()
	for e, err := range c.m.Events(ctxFor(t), id, 0) {
		if err != nil {
			t.Fatalf("no permission came: %v", err)
		}
		if e.Kind == agent.KindApprovalRequested {
			return
		}
	}
	t.Fatal("no permission came")
}

// What the projection keeps of a session is what a sync served from the
// window may still ask for: once the window has moved past them, an idle
// session keeps no message and an ended one is forgotten.
func TestProjectionKeepsNoHistory(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	svc := &Service{Sessions: c.m}
	p := runProjection(t, svc, 64)
	ended := newSession(t, c, "ended")
	runTurns(t, c, ended, 20)
	if err := c.m.Close(ctxFor(t), ended); err != nil {
		t.Fatal(err)
	}
	idle := newSession(t, c, "idle")
	runTurns(t, c, idle, 20)
	busy := newSession(t, c, "busy")
	runTurns(t, c, busy, 5) // the window moves past the others
	caughtUp(t, c, p)
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.st.projectors[ended]; ok {
		t.Error("the ended session is still kept")
	}
	if _, ok := p.st.lastStamp[ended]; ok {
		t.Error("the ended session's stamp is still kept")
	}
	pr := p.st.projectors[idle]
	if pr == nil {
		t.Fatal("the idle session is not kept")
	}
	if len(pr.done) != 0 || len(pr.messages) != 0 || len(pr.itemMessage) != 0 || len(pr.retired) > 2 {
		t.Errorf("the idle session keeps %d retired messages, %d open, %d items, %d ids", len(pr.done), len(pr.messages),
			len(pr.itemMessage), len(pr.retired))
	}
	if n := len(p.frames) - p.head; n > 64 {
		t.Errorf("the window holds %d frames, past its bound of 64", n)
	}
	if len(p.retiredQ) > 64 {
		t.Errorf("%d retired messages queued for forgetting: more than the window reaches", len(p.retiredQ))
	}
}

// A reader that falls behind the window (its socket stalls while the
// agent works) goes on from a fold of the log, and back to the window
// once the fold has caught up: it gets every frame a fold of the whole
// feed makes, once, in order.
func TestFollowFallsBehindTheWindow(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	svc := &Service{Sessions: c.m}
	p := runProjection(t, svc, 16)
	id := newSession(t, c, "behind")
	caughtUp(t, c, p)
	stall := make(chan struct{})
	var mu sync.Mutex
	var got [][]byte
	ctx, cancel := context.WithCancel(ctxFor(t))
	done := make(chan error, 1)
	go func() {
		done <- p.follow(ctx, 0, 0, func(data []byte) error {
			<-stall
			mu.Lock()
			got = append(got, data)
			mu.Unlock()
			return nil
		}, func(uint64) {})
	}()
	runTurns(t, c, id, 4) // far more frames than the window holds
	caughtUp(t, c, p)
	close(stall)
	runTurns(t, c, id, 1) // and live after
	caughtUp(t, c, p)
	// What a fold of the whole feed makes, up to its end.
	var want [][]byte
	end, _ := c.m.FeedEnd()
	fctx, stop := context.WithCancel(ctxFor(t))
	_, err := svc.stream(fctx, 0, 0, func(data []byte) error { want = append(want, data); return nil }, func(uint64) {},
		func(pos uint64) bool { return pos >= end })
	stop()
	if !errors.Is(err, errCaughtUp) {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(want) {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("%d frames of %d arrived", n, len(want))
		case <-timeAfter(2):
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("follow ended with %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("%d frames, the fold makes %d:\ngot  %s\nwant %s", len(got), len(want), got, want)
	}
}
