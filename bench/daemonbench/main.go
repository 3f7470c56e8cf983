// Command daemonbench measures what `tether daemon` adds to an agent's
// events, with the mock agent and an orchestrator on loopback:
//
//   - latency: from the moment the agent emits an event to the moment an
//     orchestrator socket has read and decoded its first mast.* frame,
//     against the same event decoded by a sessions API client in the same
//     run (p50, p99, max, and what the daemon adds at p99);
//   - reconnect: the orchestrator goes away while turns go on, comes back
//     with its store; the time from its return (and from the connection's
//     open) to the first replayed event, and the replay's rate.
//
// It prints markdown tables; see docs/benchmarks.md.
//
//	go run ./bench/daemonbench [-turns 250] [-interval 200us] [-history 500] [-missed 250]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/frontend/mast"
	"github.com/tetherhq/tether/frontend/sessionsapi"
	"github.com/tetherhq/tether/internal/fakes/fakeorchestrator"
	"github.com/tetherhq/tether/internal/gcfloor"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

func main() {
	turns := flag.Int("turns", 250, "mock turns for the latency case (about 20 events each)")
	interval := flag.Duration("interval", 200*time.Microsecond, "pause before each event of the latency case")
	history := flag.Int("history", 500, "unpaced turns logged before the orchestrator goes away")
	missed := flag.Int("missed", 250, "unpaced turns while it is away")
	floor := flag.Int64("heap-floor", 64<<20, "the heap floor in `BYTES`, as tether serve (0: none)")
	flag.Parse()
	defer gcfloor.Start(uint64(max(*floor, 0))).Stop()
	if err := latency(*turns, *interval); err != nil {
		fmt.Fprintln(os.Stderr, "daemonbench:", err)
		os.Exit(1)
	}
	if err := reconnect(*history, *missed); err != nil {
		fmt.Fprintln(os.Stderr, "daemonbench:", err)
		os.Exit(1)
	}
}

// core is a sessions core over the mock agent.
type core struct {
	m    *sessions.Manager
	stop func()
}

func openCore(dir string, mc mock.Config) (*core, error) {
	ws, err := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		return nil, err
	}
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		return nil, err
	}
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), nil)
	if err != nil {
		log.Close()
		return nil, err
	}
	m, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{"mock": mock.New(mc)},
		Workspaces: ws, Log: log, Approvals: store})
	if err != nil {
		store.Close()
		log.Close()
		return nil, err
	}
	return &core{m: m, stop: func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = m.Shutdown(ctx)
		store.Close()
		log.Close()
	}}, nil
}

// runDaemon runs a daemon over c until the returned stop.
func runDaemon(c *core, url string, onConnect func()) (stop func(), err error) {
	d, err := mast.New(mast.Config{Orchestrator: url, DeviceKey: fakeorchestrator.DevKey, KeyFile: os.DevNull,
		Service: &mast.Service{Sessions: c.m}, SyncGrace: 10 * time.Millisecond, OnConnect: onConnect,
		// The backoff's waits a hundred times shorter: the case measures
		// the replay, not the seed's waits.
		After: func(d time.Duration) <-chan time.Time {
			if d >= time.Second && d < time.Minute {
				d /= 100
			}
			return time.After(d)
		}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	return func() { cancel(); <-done }, nil
}

// arrivals records when each canonical event (session, seq) first
// arrived.
type arrivals struct {
	mu   sync.Mutex
	at   map[int64]time.Time
	time map[int64]time.Time // the event's own time, from the API
}

func (a *arrivals) first(seq int64, t time.Time) {
	a.mu.Lock()
	if _, ok := a.at[seq]; !ok {
		a.at[seq] = t
	}
	a.mu.Unlock()
}

// orchestratorSocket is the least an orchestrator does with an event
// frame: read it, decode it, note it.
func orchestratorSocket(got *arrivals, connected chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(16 << 20)
		for {
			_, data, err := conn.Read(r.Context())
			if err != nil {
				return
			}
			now := time.Now()
			var f struct {
				Type  string     `json:"type"`
				Event mast.Event `json:"event"`
			}
			if json.Unmarshal(data, &f) != nil {
				continue
			}
			switch f.Type {
			case "status":
				select {
				case connected <- struct{}{}:
				default:
				}
			case "event":
				if seq, ok := f.Event.Data["seq"].(float64); ok {
					got.first(int64(seq), now)
				}
			}
		}
	})
}

func latency(turns int, interval time.Duration) error {
	dir, err := os.MkdirTemp("", "daemonbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c, err := openCore(dir, mock.Config{Pace: interval, Outbox: 4096})
	if err != nil {
		return err
	}
	defer c.stop()
	api := httptest.NewServer(sessionsapi.Handler(sessionsapi.Config{Sessions: c.m}))
	defer api.Close()
	daemonGot := &arrivals{at: map[int64]time.Time{}}
	connected := make(chan struct{}, 1)
	orch := httptest.NewServer(orchestratorSocket(daemonGot, connected))
	defer orch.Close()
	stopDaemon, err := runDaemon(c, "ws"+orch.URL[len("http"):], nil)
	if err != nil {
		return err
	}
	defer stopDaemon()
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the daemon did not connect")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl := &client.Client{BaseURL: api.URL}
	s, err := cl.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "latency"})
	if err != nil {
		return err
	}
	apiGot := &arrivals{at: map[int64]time.Time{}, time: map[int64]time.Time{}}
	turnDone := make(chan struct{}, 1)
	followed := make(chan error, 1)
	fctx, stopFollow := context.WithCancel(ctx)
	defer func() { stopFollow(); <-followed }()
	go func() {
		for e, err := range cl.Events(fctx, s.ID, 0, 0) {
			if err != nil {
				followed <- err
				return
			}
			now := time.Now()
			apiGot.mu.Lock()
			apiGot.at[e.Seq], apiGot.time[e.Seq] = now, e.Time
			apiGot.mu.Unlock()
			if e.Kind == agent.KindTurnCompleted {
				turnDone <- struct{}{}
			}
		}
		followed <- nil
	}()
	for range turns {
		if err := cl.Prompt(ctx, s.ID, "measure"); err != nil {
			return err
		}
		select {
		case <-turnDone:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	info, err := c.m.Get(s.ID)
	if err != nil {
		return err
	}
	// Wait for the daemon's last frames.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		daemonGot.mu.Lock()
		_, ok := daemonGot.at[int64(info.LastSeq)]
		daemonGot.mu.Unlock()
		if ok {
			break
		}
	}

	var viaAPI, viaDaemon, extra []time.Duration
	for seq, t := range apiGot.time {
		ta, okA := apiGot.at[seq]
		td, okD := daemonGot.at[seq]
		if !okA || !okD {
			continue
		}
		viaAPI = append(viaAPI, ta.Sub(t))
		viaDaemon = append(viaDaemon, td.Sub(t))
		extra = append(extra, td.Sub(ta))
	}
	if len(viaAPI) == 0 {
		return fmt.Errorf("no event reached both")
	}
	a, d, x := pct(viaAPI), pct(viaDaemon), pct(extra)
	fmt.Printf("### Event latency: agent → orchestrator socket vs → sessions API client (%d events, one per %v, same run)\n\n", len(viaAPI), interval)
	fmt.Println("| path | p50 | p99 | max |")
	fmt.Println("|---|---:|---:|---:|")
	fmt.Printf("| sessions API (SSE, Go client) | %v | %v | %v |\n", a[0], a[1], a[2])
	fmt.Printf("| daemon → orchestrator socket (first mast.* frame) | %v | %v | %v |\n", d[0], d[1], d[2])
	fmt.Printf("| daemon minus API, per event | %v | %v | %v |\n", x[0], x[1], x[2])
	fmt.Printf("\nThe daemon adds %v at p99 (target ≤ 200µs).\n\n", d[1]-a[1])
	return nil
}

func pct(ds []time.Duration) [3]time.Duration {
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return [3]time.Duration{at(0.5).Round(time.Microsecond), at(0.99).Round(time.Microsecond), ds[len(ds)-1].Round(time.Microsecond)}
}

func reconnect(history, missed int) error {
	dir, err := os.MkdirTemp("", "daemonbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c, err := openCore(dir, mock.Config{Outbox: 4096})
	if err != nil {
		return err
	}
	defer c.stop()
	o, err := fakeorchestrator.Start(fakeorchestrator.Options{Store: true})
	if err != nil {
		return err
	}
	defer o.Close()
	var mu sync.Mutex
	var opened time.Time
	stopDaemon, err := runDaemon(c, o.URL(), func() { mu.Lock(); opened = time.Now(); mu.Unlock() })
	if err != nil {
		return err
	}
	defer stopDaemon()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool { return v.Connected() }); err != nil {
		return err
	}
	info, err := c.m.Create(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: "reconnect"})
	if err != nil {
		return err
	}
	lastIs := func(seq uint64) func(v fakeorchestrator.View) bool {
		return func(v fakeorchestrator.View) bool {
			ev := v.Events()
			if len(ev) == 0 {
				return false
			}
			data := ev[len(ev)-1]["event"].(map[string]any)["data"].(map[string]any)
			return uint64(data["seq"].(float64)) == seq
		}
	}
	runTurns := func(n int) (uint64, error) {
		for range n {
			prev, err := c.m.Get(info.ID)
			if err != nil {
				return 0, err
			}
			if err := c.m.Prompt(ctx, info.ID, "again"); err != nil {
				return 0, err
			}
			for {
				s, err := c.m.Get(info.ID)
				if err != nil {
					return 0, err
				}
				// Idle again after more events: turn.completed is logged.
				if s.State == sessions.StateIdle && s.LastSeq > prev.LastSeq {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		s, err := c.m.Get(info.ID)
		return s.LastSeq, err
	}
	seen, err := runTurns(history)
	if err != nil {
		return err
	}
	if err := o.Wait(ctx, lastIs(seen)); err != nil {
		return err
	}
	o.Stop()
	last, err := runTurns(missed)
	if err != nil {
		return err
	}
	var before int
	o.Read(func(v fakeorchestrator.View) { before = len(v.Events()) })
	back := time.Now()
	if err := o.Start(); err != nil {
		return err
	}
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool { return len(v.SyncResponses()) == 2 }); err != nil {
		return err
	}
	synced := time.Now()
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool { return len(v.Events()) > before }); err != nil {
		return err
	}
	first := time.Now()
	if err := o.Wait(ctx, lastIs(last)); err != nil {
		return err
	}
	done := time.Now()
	var frames int
	o.Read(func(v fakeorchestrator.View) { frames = len(v.Events()) - before })
	mu.Lock()
	conn := opened
	mu.Unlock()
	missedEvents := last - seen
	fmt.Printf("### Reconnect: %d canonical events logged, %d of them while the orchestrator was away\n\n", last, missedEvents)
	fmt.Println("| measure | result |")
	fmt.Println("|---|---:|")
	fmt.Printf("| orchestrator back → connection open (backoff ÷100) | %v |\n", conn.Sub(back).Round(time.Microsecond))
	fmt.Printf("| connection open → sync_response received | %v |\n", synced.Sub(conn).Round(time.Microsecond))
	fmt.Printf("| connection open → first replayed event | %v |\n", first.Sub(conn).Round(time.Microsecond))
	fmt.Printf("| orchestrator back → first replayed event | %v |\n", first.Sub(back).Round(time.Microsecond))
	fmt.Printf("| replay: %d canonical events as %d mast.* frames | %v |\n", missedEvents, frames, done.Sub(first).Round(time.Microsecond))
	fmt.Printf("| replay rate | %.0f canonical events/s (%.0f frames/s) |\n",
		float64(missedEvents)/done.Sub(first).Seconds(), float64(frames)/done.Sub(first).Seconds())
	fmt.Printf("| sync: whole feed folded, from connection open to sync_response | %.0f canonical events/s |\n\n",
		float64(last)/synced.Sub(conn).Seconds())
	return nil
}
