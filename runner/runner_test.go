package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/runner"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/workspace"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeDriver starts fakeAgents; Start waits for gate when it is set (and,
// with gateWorkspace set, only in that workspace).
type fakeDriver struct {
	fail          error // Start fails with it
	gate          chan struct{}
	gateWorkspace string
	started       atomic.Int32
	mu            sync.Mutex
	agents        []*fakeAgent
	specs         []runner.AgentSpec
}

func (d *fakeDriver) Validate(opts json.RawMessage) error {
	if string(opts) == `{"bad":true}` {
		return fmt.Errorf("%w: bad", runner.ErrInvalidOptions)
	}
	return nil
}

func (d *fakeDriver) Start(ctx context.Context, spec runner.AgentSpec) (runner.Agent, error) {
	d.started.Add(1)
	if d.fail != nil {
		return nil, d.fail
	}
	if d.gate != nil && (d.gateWorkspace == "" || filepath.Base(spec.Workspace) == d.gateWorkspace) {
		select {
		case <-d.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	a := &fakeAgent{out: make(chan runner.Output), closed: make(chan struct{})}
	d.mu.Lock()
	d.agents = append(d.agents, a)
	d.specs = append(d.specs, spec)
	d.mu.Unlock()
	return a, nil
}

type fakeAgent struct {
	out       chan runner.Output
	closed    chan struct{}
	closeOnce sync.Once
}

func (a *fakeAgent) Next(ctx context.Context) (runner.Output, error) {
	select {
	case o := <-a.out:
		return o, nil
	case <-a.closed:
		return runner.Output{}, errors.New("agent closed")
	case <-ctx.Done():
		return runner.Output{}, ctx.Err()
	}
}
func (a *fakeAgent) Prompt(context.Context, json.RawMessage) error { return nil }
func (a *fakeAgent) Control(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, nil
}
func (a *fakeAgent) Interrupt(context.Context) error     { return nil }
func (a *fakeAgent) Input(context.Context, []byte) error { return nil }
func (a *fakeAgent) Close() error {
	a.closeOnce.Do(func() { close(a.closed) })
	return nil
}

func (a *fakeAgent) isClosed() bool {
	select {
	case <-a.closed:
		return true
	default:
		return false
	}
}

type fixture struct {
	r   *runner.Runner
	drv *fakeDriver
	log *eventlog.Log
}

func newFixture(t *testing.T, drv *fakeDriver, grace time.Duration) *fixture {
	t.Helper()
	dir := t.TempDir()
	elog, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(filepath.Join(dir, "ws"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{Log: elog, Workspaces: ws, Driver: drv, GracePeriod: grace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		elog.Close()
	})
	return &fixture{r: r, drv: drv, log: elog}
}

func within(t *testing.T, d time.Duration, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("after %v: %s", d, what)
	}
}

func TestOpenAndEnd(t *testing.T) {
	f := newFixture(t, &fakeDriver{}, time.Minute)
	s, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := f.r.Lookup(s.ID()); !ok || got != s {
		t.Fatal("Lookup does not find the session")
	}
	if _, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "w"}); !errors.Is(err, workspace.ErrBusy) {
		t.Fatalf("second session on the workspace: %v", err)
	}
	if _, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "x", Options: json.RawMessage(`{"bad":true}`)}); !errors.Is(err, runner.ErrInvalidOptions) {
		t.Fatalf("bad options: %v", err)
	}
	if _, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "../x"}); !errors.Is(err, workspace.ErrInvalidID) {
		t.Fatalf("bad workspace: %v", err)
	}
	if _, err := f.r.Open(context.Background(), runner.OpenRequest{Resume: "nope"}); !errors.Is(err, runner.ErrSessionNotFound) {
		t.Fatalf("unknown resume: %v", err)
	}
	s.End("test")
	if s.EndReason() != "test" {
		t.Fatalf("reason %q", s.EndReason())
	}
	if _, ok := f.r.Lookup(s.ID()); ok {
		t.Fatal("ended session still found")
	}
	if !f.drv.agents[0].isClosed() {
		t.Fatal("agent not closed")
	}
	// Resume restarts it in its own workspace, with Resume set.
	s2, err := f.r.Open(context.Background(), runner.OpenRequest{Resume: s.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if s2.ID() != s.ID() || s2.WorkspaceID() != "w" || !f.drv.specs[1].Resume {
		t.Fatalf("resumed %s in %s, spec %+v", s2.ID(), s2.WorkspaceID(), f.drv.specs[1])
	}
	if _, err := f.r.Open(context.Background(), runner.OpenRequest{Resume: s.ID(), WorkspaceID: "other"}); !errors.Is(err, runner.ErrWorkspaceMismatch) {
		t.Fatalf("resume into another workspace: %v", err)
	}
}

// While a resumed session's agent starts, its id is reserved: Lookup does
// not hand out the placeholder, and a second resume does not start a
// second agent.
func TestResumeWhileStarting(t *testing.T) {
	drv := &fakeDriver{}
	f := newFixture(t, drv, time.Minute)
	s, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	s.End("test")
	drv.gate = make(chan struct{})
	opened := make(chan error, 1)
	go func() {
		_, err := f.r.Open(context.Background(), runner.OpenRequest{Resume: s.ID()})
		opened <- err
	}()
	for drv.started.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	if got, ok := f.r.Lookup(s.ID()); ok || got != nil {
		t.Fatalf("Lookup of a starting session = %v, %v", got, ok)
	}
	if _, err := f.r.Open(context.Background(), runner.OpenRequest{Resume: s.ID()}); err == nil {
		t.Fatal("a second resume of a starting session started too")
	}
	if n := drv.started.Load(); n != 2 {
		t.Fatalf("%d agents started", n)
	}
	close(drv.gate)
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	if _, ok := f.r.Lookup(s.ID()); !ok {
		t.Fatal("resumed session not found")
	}
}

// A session whose agent is still starting when Shutdown begins is ended,
// not leaked.
func TestShutdownDuringOpen(t *testing.T) {
	drv := &fakeDriver{gate: make(chan struct{}), gateWorkspace: "w"}
	f := newFixture(t, drv, time.Minute)
	opened := make(chan error, 1)
	go func() {
		_, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "w"})
		opened <- err
	}()
	for drv.started.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- f.r.Shutdown(ctx)
	}()
	// Shutdown waits for the Open; new ones are refused meanwhile.
	for i := 0; ; i++ {
		s, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: fmt.Sprint("v", i)})
		if errors.Is(err, runner.ErrShuttingDown) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		s.End("Shutdown has not begun yet")
	}
	close(drv.gate)
	if err := <-opened; !errors.Is(err, runner.ErrShuttingDown) {
		t.Fatalf("Open during shutdown: %v", err)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	for i, a := range drv.agents {
		if !a.isClosed() {
			t.Fatalf("agent %d left running", i)
		}
	}
	if n := len(f.r.Sessions()); n != 0 {
		t.Fatalf("%d sessions after shutdown", n)
	}
}

// Shutdown waits for a turn in progress, not longer than its context.
func TestShutdownWaitsForIdle(t *testing.T) {
	f := newFixture(t, &fakeDriver{}, time.Minute)
	s, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	s.TurnStarted()
	shut := make(chan error, 1)
	go func() { shut <- f.r.Shutdown(context.Background()) }()
	select {
	case <-s.Ended():
		t.Fatal("session ended during a turn")
	case <-time.After(100 * time.Millisecond):
	}
	s.TurnEnded()
	within(t, 5*time.Second, s.Ended(), "session to end once idle")
	if err := <-shut; err != nil {
		t.Fatal(err)
	}

	f2 := newFixture(t, &fakeDriver{}, time.Minute)
	s2, err := f2.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	s2.TurnStarted()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := f2.r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	within(t, time.Second, s2.Ended(), "session to end at the deadline")
}

// Go functions end with the session, and Shutdown waits for them; one
// started on an ended session runs at once with its context done.
func TestGo(t *testing.T) {
	f := newFixture(t, &fakeDriver{}, time.Minute)
	s, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	s.Go(func(ctx context.Context) {
		<-ctx.Done()
		ran.Add(1)
	})
	// The agent ends the way a pump sees it: cancelled first, so the pump
	// can tell the session's end from the agent's.
	agent := f.drv.agents[0]
	s.Go(func(ctx context.Context) {
		_, err := agent.Next(ctx)
		if ctx.Err() == nil {
			t.Errorf("the agent's output ended (%v) before the session's context", err)
		}
		ran.Add(1)
	})
	s.End("done")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 2 {
		t.Fatalf("%d of 2 Go functions returned before Shutdown did", n)
	}
	called := false
	s.Go(func(ctx context.Context) {
		called = ctx.Err() != nil
	})
	if !called {
		t.Fatal("Go on an ended session did not run fn at once with a done context")
	}
}

// Events yields every event after `after` exactly once, in order, live
// ones included, and ends after the session's last event.
func TestEventsExactlyOnce(t *testing.T) {
	f := newFixture(t, &fakeDriver{}, time.Minute)
	s, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	const total = 3000
	const readers = 8
	next := 1
	for ; next <= total/4; next++ { // readers start from seqs that exist
		if _, err := s.Append(context.Background(), fmt.Appendf(nil, "event %d", next)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for i := range readers {
		after := uint64(i * (total / 4) / readers)
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := after + 1
			for ev, err := range s.Events(context.Background(), after) {
				if err != nil {
					errs <- err
					return
				}
				if ev.Seq != want || string(ev.Payload) != fmt.Sprintf("event %d", want) {
					errs <- fmt.Errorf("reader from %d: got %d %q, want %d", after, ev.Seq, ev.Payload, want)
					return
				}
				want++
			}
			if want != total+1 {
				errs <- fmt.Errorf("reader from %d stopped at %d", after, want)
			}
		}()
	}
	var mu sync.Mutex // payloads name their seq: append one at a time
	var appenders sync.WaitGroup
	for range 4 {
		appenders.Add(1)
		go func() {
			defer appenders.Done()
			for {
				mu.Lock()
				if next > total {
					mu.Unlock()
					return
				}
				seq, err := s.Append(context.Background(), fmt.Appendf(nil, "event %d", next))
				if err != nil || seq != uint64(next) {
					mu.Unlock()
					errs <- fmt.Errorf("append %d: seq %d, %v", next, seq, err)
					return
				}
				next++
				mu.Unlock()
			}
		}()
	}
	appenders.Wait()
	s.End("done")
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The grace period runs while nobody is attached.
func TestGrace(t *testing.T) {
	const grace = 50 * time.Millisecond
	f := newFixture(t, &fakeDriver{}, grace)
	s, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	detach := s.Attach()
	detach2 := s.Attach()
	select {
	case <-s.Ended():
		t.Fatal("attached session ended")
	case <-time.After(4 * grace):
	}
	detach()
	detach() // idempotent: the other attachment still counts
	select {
	case <-s.Ended():
		t.Fatal("session ended with one connection still attached")
	case <-time.After(4 * grace):
	}
	left := time.Now()
	detach2()
	within(t, 5*time.Second, s.Ended(), "session to end after the grace period")
	if d := time.Since(left); d < grace {
		t.Fatalf("ended %v after the last detach", d)
	}
	if s.EndReason() == "" {
		t.Fatal("no end reason")
	}

	// Never attached: the grace period runs from the start.
	s2, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, s2.Ended(), "an unattended session to end")
}

func TestTooManySessions(t *testing.T) {
	dir := t.TempDir()
	elog, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer elog.Close()
	ws, err := workspace.New(filepath.Join(dir, "ws"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{Log: elog, Workspaces: ws, Driver: &fakeDriver{}, MaxSessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(context.Background())
	if _, err := r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "b"}); !errors.Is(err, runner.ErrTooManySessions) {
		t.Fatalf("second session: %v", err)
	}
}

// EventGroups yields what Events yields, in groups within their limits;
// AppendBatch numbers its events in a row.
func TestEventGroups(t *testing.T) {
	f := newFixture(t, &fakeDriver{}, time.Minute)
	s, err := f.r.Open(context.Background(), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	const total = 2000
	const maxEvents, maxBytes = 64, 300
	type group struct {
		seqs  []uint64
		bytes int
	}
	groups := make(chan []group, 1)
	go func() {
		var got []group
		want := uint64(1)
		for evs, err := range s.EventGroups(context.Background(), 0, maxEvents, maxBytes) {
			if err != nil {
				t.Error(err)
				break
			}
			g := group{}
			for _, ev := range evs {
				if ev.Seq != want || string(ev.Payload) != fmt.Sprintf("event %04d", want) {
					t.Errorf("got %d %q, want %d", ev.Seq, ev.Payload, want)
				}
				want++
				g.seqs = append(g.seqs, ev.Seq)
				g.bytes += len(ev.Payload)
			}
			got = append(got, g)
		}
		groups <- got
	}()
	for next := 1; next <= total; {
		var batch [][]byte
		for range min(1+next%7, total-next+1) {
			batch = append(batch, fmt.Appendf(nil, "event %04d", next))
			next++
		}
		first, err := s.AppendBatch(context.Background(), batch)
		if err != nil || first != uint64(next-len(batch)) {
			t.Fatalf("AppendBatch: first %d, %v; want %d", first, err, next-len(batch))
		}
	}
	s.End("done")
	got := <-groups
	n := 0
	for _, g := range got {
		n += len(g.seqs)
		if len(g.seqs) == 0 || len(g.seqs) > maxEvents || g.bytes > maxBytes {
			t.Fatalf("group of %d events, %d bytes", len(g.seqs), g.bytes)
		}
	}
	if n != total {
		t.Fatalf("%d events in %d groups, want %d", n, len(got), total)
	}
	t.Logf("%d events in %d groups", n, len(got))
}
