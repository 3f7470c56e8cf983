package mast

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/internal/testing/fakeorchestrator"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// core is a runner core over a data directory: reopened on the same
// directory, it is the same daemon after a restart.
type core struct {
	m     *sessions.Manager
	log   *eventlog.Bolt
	store *approvals.Store
}

// gate paces the mock agent: while closed, each event waits to be let
// through; open, they all pass.
type gate struct {
	mu      sync.Mutex
	open    bool
	waiters []chan time.Time
}

func (g *gate) after(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		ch <- time.Now()
	} else {
		g.waiters = append(g.waiters, ch)
	}
	return ch
}

func (g *gate) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = open
	if open {
		for _, w := range g.waiters {
			w <- time.Now()
		}
		g.waiters = nil
	}
}

// step lets n events through, one at a time.
func (g *gate) step(t *testing.T, n int) {
	t.Helper()
	ctx := ctxFor(t)
	for range n {
		for {
			g.mu.Lock()
			if len(g.waiters) > 0 {
				g.waiters[0] <- time.Now()
				g.waiters = g.waiters[1:]
				g.mu.Unlock()
				break
			}
			g.mu.Unlock()
			select {
			case <-ctx.Done():
				t.Fatal("the agent did not take a step")
			case <-time.After(time.Millisecond):
			}
		}
	}
}

func openCore(t *testing.T, dir string, g *gate, logOpts ...eventlog.Options) *core {
	t.Helper()
	var lo eventlog.Options
	if len(logOpts) > 0 {
		lo = logOpts[0]
	}
	mc := mock.Config{}
	if g != nil {
		mc.Pace, mc.After = time.Nanosecond, g.after
	}
	return openCoreWith(t, dir, mock.New(mc), lo)
}

// openCoreWith is openCore with the mock driver given: one that outlives
// a core keeps its conversations, as a real agent's own store does, so a
// core opened after another resumes them.
func openCoreWith(t *testing.T, dir string, mockDriver agent.Driver, lo eventlog.Options) *core {
	t.Helper()
	ws, err := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), lo)
	if err != nil {
		t.Fatal(err)
	}
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{"mock": mockDriver},
		Unavailable: map[string]string{"codex": "no codex on PATH"},
		Workspaces:  ws, Log: log, Approvals: store, IndexDir: filepath.Join(dir, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	c := &core{m: m, log: log, store: store}
	t.Cleanup(c.close)
	return c
}

func (c *core) close() {
	if c.m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = c.m.Shutdown(ctx)
	_ = c.log.Close()
	_ = c.store.Close()
	c.m = nil
}

// running is a daemon running against an orchestrator.
type running struct {
	d      *Daemon
	cancel context.CancelFunc
	done   chan error
}

// startDaemon runs a daemon over c until the test ends (or stop).
func startDaemon(t *testing.T, c *core, orch *fakeorchestrator.Server, edit func(*Config)) *running {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{Orchestrator: orch.URL(), DeviceKey: fakeorchestrator.DevKey,
		KeyFile: filepath.Join(dir, "device-key.json"), Service: &Service{Sessions: c.m},
		Heartbeat: time.Hour, HealthInterval: time.Hour, SyncGrace: 50 * time.Millisecond,
		After: quickBackoff(nil), Jitter: func() float64 { return 0.5 },
		// What the daemon logs is in the test's output, for a failure's why.
		Logger: slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if edit != nil {
		edit(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{d: d, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *running) stop(t *testing.T) error {
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon did not stop")
		return nil
	}
}

// quickBackoff is a clock whose waits of a second and more (the
// backoff's, up to a minute) pass a hundred times faster; it records
// them.
func quickBackoff(record func(time.Duration)) func(time.Duration) <-chan time.Time {
	return func(d time.Duration) <-chan time.Time {
		if d >= time.Second && d < time.Minute {
			if record != nil {
				record(d)
			}
			d /= 100
		}
		return time.After(d)
	}
}

func startOrchestrator(t *testing.T, opts fakeorchestrator.Options) *fakeorchestrator.Server {
	t.Helper()
	o, err := fakeorchestrator.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return o
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func connected(v fakeorchestrator.View) bool { return v.Connected() && len(v.Statuses()) > 0 }

// command sends a command and fails the test on a transport error.
func command(t *testing.T, o *fakeorchestrator.Server, cmd map[string]any) fakeorchestrator.Result {
	t.Helper()
	r, err := o.Command(ctxFor(t), cmd)
	if err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return r
}

func mustOK(t *testing.T, r fakeorchestrator.Result, into any) {
	t.Helper()
	if r.Status != "ok" || r.Error != "" {
		t.Fatalf("result %+v, want ok", r)
	}
	if into != nil {
		if err := json.Unmarshal(r.Data, into); err != nil {
			t.Fatalf("data %s: %v", r.Data, err)
		}
	}
}

func mustFail(t *testing.T, r fakeorchestrator.Result, want string) {
	t.Helper()
	if r.Status != "error" || r.Error == "" || len(r.Data) != 0 {
		t.Fatalf("result %+v, want an error", r)
	}
	if want != "" && !strings.Contains(r.Error, want) {
		t.Fatalf("error %q does not say %q", r.Error, want)
	}
}

// eventsOf are the mast events of one session the orchestrator got.
func eventsOf(v fakeorchestrator.View, sessionID string) []map[string]any {
	var out []map[string]any
	for _, f := range v.Events() {
		ev, _ := f["event"].(map[string]any)
		if ev["sessionId"] == sessionID {
			out = append(out, ev)
		}
	}
	return out
}

func hasEvent(v fakeorchestrator.View, sessionID, typ string, match func(data map[string]any) bool) bool {
	for _, ev := range eventsOf(v, sessionID) {
		data, _ := ev["data"].(map[string]any)
		if ev["type"] == typ && (match == nil || match(data)) {
			return true
		}
	}
	return false
}

// permissionID waits for the session's newest pending permission.
func permissionID(t *testing.T, o *fakeorchestrator.Server, sessionID string) string {
	t.Helper()
	var id string
	err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		for _, ev := range eventsOf(v, sessionID) {
			if ev["type"] == EventPermissionCreated {
				perm := ev["data"].(map[string]any)["permission"].(map[string]any)
				id = perm["id"].(string)
			}
		}
		return id != ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func turnEnded(v fakeorchestrator.View, sessionID string, n int) bool {
	count := 0
	for _, ev := range eventsOf(v, sessionID) {
		data, _ := ev["data"].(map[string]any)
		s, _ := data["session"].(map[string]any)
		if ev["type"] == EventSessionUpdated && s["turn"] != nil {
			count++
		}
	}
	return count >= n
}

func timeAfter(ms int) <-chan time.Time { return time.After(time.Duration(ms) * time.Millisecond) }

// tWriter writes log lines to the test's log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// waitLogged waits until the session's log has n turns' ends.
func waitLogged(t *testing.T, c *core, sessionID string, n int) {
	t.Helper()
	seen := 0
	for e, err := range c.m.Events(ctxFor(t), sessionID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == agent.KindTurnCompleted {
			if seen++; seen == n {
				return
			}
		}
	}
	t.Fatalf("the log has %d turns' ends, want %d", seen, n)
}
