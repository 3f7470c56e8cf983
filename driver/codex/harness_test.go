package codex_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/codex"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// waitLimit bounds every wait for an event of the real CLI.
const waitLimit = 60 * time.Second

// rig is the real codex CLI against a fake OpenAI server: a driver, a home
// with the fake's provider configuration, and a workspace.
type rig struct {
	t        *testing.T
	srv      *fakeopenai.Server
	drv      *codex.Driver
	home, ws string
}

func newRig(t *testing.T, opts fakeopenai.Options, tune func(*driver.Config)) *rig {
	t.Helper()
	bin := testenv.RequireCodexCLI(t)
	srv, err := fakeopenai.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	home, ws := t.TempDir(), t.TempDir()
	env, err := testenv.CodexEnv(home, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg := driver.Config{CLIPath: bin, Env: env}
	if tune != nil {
		tune(&cfg)
	}
	drv, err := codex.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &rig{t: t, srv: srv, drv: drv, home: home, ws: ws}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// start starts a session and watches its events; cleanup closes it and
// checks that nothing it started is left.
func (r *rig) start(req agent.StartRequest) (agent.Session, *watch) {
	r.t.Helper()
	if req.Workspace == "" {
		req.Workspace = r.ws
	}
	if req.Home == "" {
		req.Home = r.home
	}
	s, err := r.drv.Start(ctxFor(r.t), req)
	if err != nil {
		r.t.Fatalf("Start: %v", err)
	}
	w := watchEvents(r.t, s)
	r.t.Cleanup(func() {
		if err := s.Close(); err != nil {
			r.t.Errorf("Close: %v", err)
		}
		w.wait()
		if pids := pidsIn(req.Workspace); len(pids) > 0 {
			r.t.Errorf("processes left in the workspace after Close: %v", pids)
		}
	})
	return s, w
}

// watch collects a session's events as they come, each one validated.
type watch struct {
	t    *testing.T
	mu   sync.Mutex
	evs  []agent.Event
	more chan struct{}
	done chan struct{}
}

func watchEvents(t *testing.T, s agent.Session) *watch {
	w := &watch{t: t, more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for e, err := range s.Events(context.Background()) {
			if err != nil {
				t.Errorf("Events: %v", err)
				return
			}
			if err := e.Validate(); err != nil {
				t.Errorf("invalid event: %v: %+v", err, e)
			}
			w.mu.Lock()
			w.evs = append(w.evs, e)
			w.mu.Unlock()
			select {
			case w.more <- struct{}{}:
			default:
			}
		}
	}()
	return w
}

func (w *watch) wait() {
	select {
	case <-w.done:
	case <-time.After(waitLimit):
		w.t.Errorf("events did not end")
	}
}

// until waits for the first event from index from on that matches, and
// returns its index.
func (w *watch) until(from int, match func(agent.Event) bool) (agent.Event, int) {
	w.t.Helper()
	deadline := time.After(waitLimit)
	for {
		w.mu.Lock()
		for i := from; i < len(w.evs); i++ {
			if match(w.evs[i]) {
				e := w.evs[i]
				w.mu.Unlock()
				return e, i
			}
		}
		from = len(w.evs)
		w.mu.Unlock()
		select {
		case <-w.more:
		case <-w.done:
			w.mu.Lock()
			n := len(w.evs)
			w.mu.Unlock()
			if n == from {
				w.t.Fatalf("events ended without the one waited for; got:\n%s", w.dump())
			}
		case <-deadline:
			w.t.Fatalf("timed out; events so far:\n%s", w.dump())
		}
	}
}

func (w *watch) kind(from int, k agent.Kind) (agent.Event, int) {
	w.t.Helper()
	return w.until(from, func(e agent.Event) bool { return e.Kind == k })
}

// since returns the events from index from on.
func (w *watch) since(from int) []agent.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.evs[from:])
}

func (w *watch) dump() string {
	var b strings.Builder
	for _, e := range w.since(0) {
		b.WriteString(string(e.Kind))
		if e.Item != nil {
			b.WriteString(" " + string(e.Item.Type) + " " + string(e.Item.Status) + " " + strconv.Quote(e.Item.Text))
		}
		if e.Turn != nil {
			b.WriteString(" " + string(e.Turn.Status))
		}
		if e.Error != nil {
			b.WriteString(" " + string(e.Error.Code) + " " + e.Error.Message)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// turnEnd waits for the turn.completed after index from.
func (w *watch) turnEnd(from int) (agent.Event, int) {
	w.t.Helper()
	return w.kind(from, agent.KindTurnCompleted)
}

// pidsIn lists live processes whose working directory is dir.
func pidsIn(dir string) []int {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err == nil && cwd == real && !zombie(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}
