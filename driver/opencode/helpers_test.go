package opencode

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// realEnv is the real CLI against a fake OpenAI API, offline: a home with
// OpenCode's config for the fake and a workspace.
type realEnv struct {
	fake      *fakeopenai.Server
	home, ws  string
	driver    agent.Driver
	cfg       driver.Config
	startedAt time.Time
}

func newRealEnv(t *testing.T, tune func(*driver.Config)) *realEnv {
	t.Helper()
	cli := testenv.RequireOpenCodeCLI(t)
	fake, err := fakeopenai.Start(fakeopenai.Options{SlowChunkDelay: 100 * time.Millisecond, SlowChunks: 40})
	if err != nil {
		t.Fatalf("fake: %v", err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	home, ws := t.TempDir(), t.TempDir()
	env, err := testenv.OpenCodeEnv(home, fake.URL(), false)
	if err != nil {
		t.Fatalf("OpenCodeEnv: %v", err)
	}
	// A loaded machine (the suite runs packages side by side) has taken
	// more than the default 30 s for the server to say where it listens.
	cfg := driver.Config{CLIPath: cli, Env: env, StartTimeout: 90 * time.Second}
	if tune != nil {
		tune(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &realEnv{fake: fake, home: home, ws: ws, driver: d, cfg: cfg}
}

// run is a started session and the events read from it so far.
type run struct {
	t      *testing.T
	s      agent.Session
	events chan agent.Event
	seen   []agent.Event
}

// start starts a session and reads its events on a goroutine until it
// ends; the test's cleanup closes it.
func (e *realEnv) start(t *testing.T, req agent.StartRequest) *run {
	t.Helper()
	if req.Workspace == "" {
		req.Workspace = e.ws
	}
	if req.Home == "" {
		req.Home = e.home
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	begin := time.Now()
	s, err := e.driver.Start(ctx, req)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start took %v", time.Since(begin).Round(time.Millisecond))
	r := &run{t: t, s: s, events: make(chan agent.Event, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(r.events)
		for ev, err := range s.Events(context.Background()) {
			if err != nil {
				t.Errorf("Events: %v", err)
				return
			}
			r.events <- ev
		}
	}()
	t.Cleanup(func() {
		begin := time.Now()
		_ = s.Close()
		<-done
		t.Logf("Close took %v", time.Since(begin).Round(time.Millisecond))
	})
	return r
}

// next returns the next event, validated, or fails the test after
// timeout; ok is false when the session's events ended.
func (r *run) next(timeout time.Duration) (agent.Event, bool) {
	r.t.Helper()
	select {
	case ev, ok := <-r.events:
		if !ok {
			return agent.Event{}, false
		}
		if err := ev.Validate(); err != nil {
			r.t.Errorf("invalid event %+v: %v", ev, err)
		}
		r.seen = append(r.seen, ev)
		return ev, true
	case <-time.After(timeout):
		r.t.Fatalf("no event in %v; seen: %s", timeout, kinds(r.seen))
		return agent.Event{}, false
	}
}

// until reads events until one matches, and returns it.
func (r *run) until(what string, match func(agent.Event) bool) agent.Event {
	r.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ev, ok := r.next(time.Until(deadline))
		if !ok {
			r.t.Fatalf("events ended before %s; seen: %s", what, kinds(r.seen))
		}
		if match(ev) {
			return ev
		}
	}
}

// rest reads every event until the session's events end.
func (r *run) rest() {
	r.t.Helper()
	for {
		if _, ok := r.next(60 * time.Second); !ok {
			return
		}
	}
}

func kindIs(k agent.Kind) func(agent.Event) bool {
	return func(e agent.Event) bool { return e.Kind == k }
}

func kinds(evs []agent.Event) string {
	var b bytes.Buffer
	for _, e := range evs {
		b.WriteString(string(e.Kind))
		if e.Item != nil {
			b.WriteString("(" + string(e.Item.Type) + "/" + string(e.Item.Status) + ")")
		}
		b.WriteByte(' ')
	}
	return b.String()
}

// prompt sends a prompt.
func (r *run) prompt(text string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.s.Prompt(ctx, agent.Prompt{Text: text}); err != nil {
		r.t.Fatalf("Prompt: %v", err)
	}
}

// turnOf reads events until the turn ends and returns its turn.completed.
func (r *run) turnEnd() agent.Event {
	r.t.Helper()
	return r.until("turn.completed", kindIs(agent.KindTurnCompleted))
}

// waitNoProcs waits until no process runs with kv in its environment.
func waitNoProcs(t *testing.T, kv string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := testenv.PIDsWithEnv(kv)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left running: %v", pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
