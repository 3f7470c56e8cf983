// Command daemonbench measures what `tether daemon` adds to an agent's
// events, with the mock agent and an orchestrator on loopback:
//
//   - latency: from the moment the agent emits an event to the moment an
//     orchestrator socket has read and decoded its first mast.* frame,
//     against the moment a sessions API client has decoded it: in runs
//     of the same turns with one reader each, alternating (p50, p99,
//     max), then in paired runs with both readers on the same events,
//     whose p99s are compared within each run (what the daemon adds);
//   - reconnect: after a history of each size (-logged) the orchestrator
//     goes away while -missed more events are logged, and comes back with
//     its store; the time from the connection's open to sync_response and
//     to the last missed event, and the events the daemon read from the
//     core meanwhile, for a daemon that folds the log on every reconnect
//     (before) and one that keeps its projection (after), alternating.
//
// It prints markdown tables; see docs/benchmarks.md. -reps 0 skips the
// latency case.
//
//	go run ./bench/daemonbench [-turns 250] [-interval 200us] [-reps 5] [-logged 1000,10000,50000] [-missed 100] [-reconnect-reps 3]
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/frontend/mast"
	"github.com/tetherhq/tether/frontend/sessionsapi"
	"github.com/tetherhq/tether/internal/gcfloor"
	"github.com/tetherhq/tether/internal/testing/fakeorchestrator"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

func main() {
	turns := flag.Int("turns", 250, "mock turns for the latency case (about 20 events each)")
	interval := flag.Duration("interval", 200*time.Microsecond, "pause before each event of the latency case")
	logged := flag.String("logged", "1000,10000,50000", "events logged before a reconnect, one case each")
	missed := flag.Int("missed", 100, "events logged while the orchestrator is away")
	reconnectReps := flag.Int("reconnect-reps", 3, "reconnects per mode and case (medians)")
	reps := flag.Int("reps", 5, "latency runs per reader, alternating, and paired runs of both (medians compared)")
	window := flag.Duration("log-commit-window", 0, "the event log's group-commit window (0: its default)")
	floor := flag.Int64("heap-floor", gcfloor.Default, "the heap floor in `BYTES`, as tether serve (0: none)")
	flag.Parse()
	defer gcfloor.Start(uint64(max(*floor, 0))).Stop()
	logOpts = eventlog.Options{FlushInterval: *window}
	if *reps > 0 {
		if err := latency(*turns, *interval, *reps); err != nil {
			fmt.Fprintln(os.Stderr, "daemonbench:", err)
			os.Exit(1)
		}
	}
	var sizes []int
	for f := range strings.SplitSeq(*logged, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "daemonbench: -logged: not a list of counts:", *logged)
			os.Exit(2)
		}
		sizes = append(sizes, n)
	}
	if err := reconnects(sizes, *missed, *reconnectReps); err != nil {
		fmt.Fprintln(os.Stderr, "daemonbench:", err)
		os.Exit(1)
	}
}

// logOpts are the event log's options, from the flags.
var logOpts eventlog.Options

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
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), logOpts)
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

// runDaemon runs a daemon over c until the returned stop; edit, when
// set, changes its configuration.
func runDaemon(c *core, url string, onConnect func(), edit func(*mast.Config)) (stop func(), err error) {
	cfg := mast.Config{Orchestrator: url, DeviceKey: fakeorchestrator.DevKey, KeyFile: os.DevNull,
		Service: &mast.Service{Sessions: c.m}, SyncGrace: 10 * time.Millisecond, OnConnect: onConnect,
		// The backoff's waits a hundred times shorter: the case measures
		// the replay, not the seed's waits.
		After: func(d time.Duration) <-chan time.Time {
			if d >= time.Second && d < time.Minute {
				d /= 100
			}
			return time.After(d)
		}}
	if edit != nil {
		edit(&cfg)
	}
	d, err := mast.New(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	return func() { cancel(); <-done }, nil
}

// prompt starts a turn, trying again while the mock still winds the last
// one down (the log may show its end a moment before the mock takes a new
// prompt).
func prompt(ctx context.Context, m *sessions.Manager, id string) error {
	for {
		err := m.Prompt(ctx, id, agent.Prompt{Text: "measure"})
		if !errors.Is(err, agent.ErrTurnInProgress) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Microsecond):
		}
	}
}

// waitStarted waits for the session's session.started: until it is
// logged, a turn's end cannot be told from it.
func waitStarted(ctx context.Context, m *sessions.Manager, id string) error {
	for {
		s, err := m.Get(id)
		if err != nil || s.LastSeq > 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Microsecond):
		}
	}
}

// arrivals records when each canonical event (by seq) first arrived.
type arrivals struct {
	mu sync.Mutex
	at map[int64]time.Time
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
			// What an orchestrator's cache reads of a frame: its types, the
			// session, and (here) the canonical seq.
			var f struct {
				Type  string `json:"type"`
				Event struct {
					Type      string `json:"type"`
					SessionID string `json:"sessionId"`
					Data      struct {
						Seq       *int64 `json:"seq"`
						MessageID string `json:"messageID"`
					} `json:"data"`
				} `json:"event"`
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
				if f.Event.Data.Seq != nil {
					got.first(*f.Event.Data.Seq, now)
				}
			}
		}
	})
}

// latency runs the paced turns with one reader at a time, the sessions
// API client or the daemon, alternating, reps times each, and prints
// each run's percentiles; then the paired runs.
func latency(turns int, interval time.Duration, reps int) error {
	type result struct {
		path string
		p    [3]time.Duration
		n    int
	}
	var results []result
	for i := range 2 * reps {
		path := []string{"sessions API (SSE, Go client)", "daemon → orchestrator socket (first mast.* frame)"}[i%2]
		lats, err := latencyRun(turns, interval, i%2 == 1)
		if err != nil {
			return err
		}
		results = append(results, result{path, pct(lats), len(lats)})
	}
	fmt.Printf("### Event latency: agent → reader on loopback, one reader per run (%d events a run, one per %v)\n\n", results[0].n, interval)
	fmt.Println("| run | path | p50 | p99 | max |")
	fmt.Println("|---:|---|---:|---:|---:|")
	var api99, daemon99 []time.Duration
	for i, r := range results {
		fmt.Printf("| %d | %s | %v | %v | %v |\n", i+1, r.path, r.p[0], r.p[1], r.p[2])
		if i%2 == 0 {
			api99 = append(api99, r.p[1])
		} else {
			daemon99 = append(daemon99, r.p[1])
		}
	}
	slices.Sort(api99)
	slices.Sort(daemon99)
	fmt.Printf("\nMedian p99: sessions API %v, daemon %v: the daemon adds %v at p99 (target ≤ 200µs).\n\n",
		api99[len(api99)/2], daemon99[len(daemon99)/2], daemon99[len(daemon99)/2]-api99[len(api99)/2])
	return pairedLatency(turns, interval, reps)
}

// pairedLatency runs both readers at once on the same events, so that
// both see the same machine at the same moments: the p99s of one run are
// compared with each other, and the runs' differences summarised. Tail
// latencies of separate runs on a shared machine differ by more than the
// daemon's own cost; within a run they do not.
func pairedLatency(turns int, interval time.Duration, reps int) error {
	fmt.Printf("### Event latency, both readers at once on the same events (%d runs)\n\n", reps)
	fmt.Println("| run | sessions API p50 | daemon p50 | sessions API p99 | daemon p99 | daemon − API at p99 |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|")
	var added []time.Duration
	for i := range reps {
		lats, err := latencyReaders(turns, interval, true, true)
		if err != nil {
			return err
		}
		api, dmn := pct(lats[0]), pct(lats[1])
		added = append(added, dmn[1]-api[1])
		fmt.Printf("| %d | %v | %v | %v | %v | %v |\n", i+1, api[0], dmn[0], api[1], dmn[1], dmn[1]-api[1])
	}
	slices.Sort(added)
	fmt.Printf("\nMedian over the runs: the daemon adds %v at p99 (target ≤ 200µs).\n\n", added[len(added)/2])
	return nil
}

// latencyRun runs the turns with one reader and returns each event's
// latency: from its time to its decoding by the API client, or (daemon)
// to the orchestrator socket's decoding of its first mast.* frame.
func latencyRun(turns int, interval time.Duration, viaDaemon bool) ([]time.Duration, error) {
	lats, err := latencyReaders(turns, interval, !viaDaemon, viaDaemon)
	if err != nil {
		return nil, err
	}
	if viaDaemon {
		return lats[1], nil
	}
	return lats[0], nil
}

// latencyReaders runs the turns with the sessions API reader, the daemon,
// or both at once, and returns each one's latencies ([0] the API's, [1]
// the daemon's).
func latencyReaders(turns int, interval time.Duration, viaAPI, viaDaemon bool) ([2][]time.Duration, error) {
	var none [2][]time.Duration
	dir, err := os.MkdirTemp("", "daemonbench-")
	if err != nil {
		return none, err
	}
	defer os.RemoveAll(dir)
	c, err := openCore(dir, mock.Config{Pace: interval, Outbox: 4096})
	if err != nil {
		return none, err
	}
	defer c.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	info, err := c.m.Create(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: "latency"})
	if err != nil {
		return none, err
	}
	if err := waitStarted(ctx, c.m, info.ID); err != nil {
		return none, err
	}
	got := &arrivals{at: map[int64]time.Time{}}
	gotAPI := &arrivals{at: map[int64]time.Time{}}
	if viaDaemon {
		connected := make(chan struct{}, 1)
		orch := httptest.NewServer(orchestratorSocket(got, connected))
		defer orch.Close()
		stopDaemon, err := runDaemon(c, "ws"+orch.URL[len("http"):], nil, nil)
		if err != nil {
			return none, err
		}
		defer stopDaemon()
		select {
		case <-connected:
		case <-time.After(10 * time.Second):
			return none, fmt.Errorf("the daemon did not connect")
		}
		// Past its wait for a sync_request: the stream is live.
		time.Sleep(100 * time.Millisecond)
	}
	if viaAPI {
		api := httptest.NewServer(sessionsapi.Handler(sessionsapi.Config{Sessions: c.m}))
		defer api.Close()
		cl := &client.Client{BaseURL: api.URL}
		fctx, stopFollow := context.WithCancel(ctx)
		followed := make(chan struct{})
		defer func() { stopFollow(); <-followed }()
		go func() {
			defer close(followed)
			for e, err := range cl.Events(fctx, info.ID, 0, 0) {
				if err != nil {
					return
				}
				gotAPI.first(e.Seq, time.Now())
			}
		}()
	}
	for range turns {
		prev, err := c.m.Get(info.ID)
		if err != nil {
			return none, err
		}
		if err := prompt(ctx, c.m, info.ID); err != nil {
			return none, err
		}
		for {
			s, err := c.m.Get(info.ID)
			if err != nil {
				return none, err
			}
			if s.State == sessions.StateIdle && s.LastSeq > prev.LastSeq {
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	last, err := c.m.Get(info.ID)
	if err != nil {
		return none, err
	}
	for _, a := range []*arrivals{got, gotAPI} {
		if (a == got && !viaDaemon) || (a == gotAPI && !viaAPI) {
			continue
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			a.mu.Lock()
			_, ok := a.at[int64(last.LastSeq)]
			a.mu.Unlock()
			if ok {
				break
			}
			if time.Now().After(deadline) {
				return none, fmt.Errorf("the last event did not arrive")
			}
		}
	}
	// The events' own times, from the log.
	rctx, stopRead := context.WithCancel(ctx)
	defer stopRead()
	var lats [2][]time.Duration
	for e, err := range c.m.Events(rctx, info.ID, 0) {
		if err != nil {
			return none, err
		}
		for i, a := range []*arrivals{gotAPI, got} {
			a.mu.Lock()
			at, ok := a.at[e.Seq]
			a.mu.Unlock()
			if ok && e.Kind != agent.KindSessionStarted {
				lats[i] = append(lats[i], at.Sub(e.Time))
			}
		}
		if uint64(e.Seq) >= last.LastSeq {
			break
		}
	}
	if (viaAPI && len(lats[0]) == 0) || (viaDaemon && len(lats[1]) == 0) {
		return none, fmt.Errorf("no event arrived")
	}
	return lats, nil
}

func pct(ds []time.Duration) [3]time.Duration {
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return [3]time.Duration{at(0.5).Round(time.Microsecond), at(0.99).Round(time.Microsecond), ds[len(ds)-1].Round(time.Microsecond)}
}

// reconnectModes are the daemon's two ways to reconnect: before, every
// reconnect folded the whole feed from the log (a daemon without a
// window does so still); after, it answers from the projection it keeps.
var reconnectModes = []struct {
	name   string
	frames int
}{{"before: fold the log", -1}, {"after: the daemon's projection", 0}}

// reconnectResult is one reconnect's times and reads.
type reconnectResult struct {
	logged, missed uint64
	// sync is from the connection's open to sync_response; replay to the
	// last missed event's frame.
	sync, replay time.Duration
	// read is how many events the daemon read from the core from the
	// orchestrator's going away to the last missed event's frame.
	read int64
}

// reconnects measures, for each history size, a reconnect after missed
// events with each mode, reps times alternating, and prints the medians.
func reconnects(sizes []int, missed, reps int) error {
	type row struct {
		logged uint64
		res    [2][]reconnectResult
	}
	var rows []row
	for _, size := range sizes {
		res, err := reconnectSize(size, missed, reps)
		if err != nil {
			return err
		}
		rows = append(rows, row{logged: uint64(size), res: res})
	}
	fmt.Printf("### Reconnect after about %d missed events (whole turns), by history (medians of %d, modes alternating)\n\n", missed, reps)
	fmt.Println("| events logged | missed | mode | open → sync_response | open → last missed event | events read | before ÷ after |")
	fmt.Println("|---:|---:|---|---:|---:|---:|---:|")
	for _, r := range rows {
		var replay [2]time.Duration
		for m, mode := range reconnectModes {
			med := medianResult(r.res[m])
			replay[m] = med.replay
			ratio := ""
			if m == 1 {
				ratio = fmt.Sprintf("%.0f×", float64(replay[0])/float64(replay[1]))
			}
			fmt.Printf("| %d | %d | %s | %v | %v | %d | %s |\n", med.logged, med.missed, mode.name, med.sync.Round(time.Microsecond),
				med.replay.Round(time.Microsecond), med.read, ratio)
		}
	}
	fmt.Println()
	return nil
}

// medianResult is the result of median replay time.
func medianResult(rs []reconnectResult) reconnectResult {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b reconnectResult) int { return cmp.Compare(a.replay, b.replay) })
	med := rs[len(rs)/2]
	syncs := make([]time.Duration, len(rs))
	for i, r := range rs {
		syncs[i] = r.sync
	}
	slices.Sort(syncs)
	med.sync = syncs[len(syncs)/2]
	return med
}

// countingCore counts the events the daemon reads from the feed and the
// sessions' logs.
type countingCore struct {
	sessions.Core
	read atomic.Int64
}

func (c *countingCore) Feed(ctx context.Context, after uint64) iter.Seq2[sessions.FeedEvent, error] {
	return func(yield func(sessions.FeedEvent, error) bool) {
		for fe, err := range c.Core.Feed(ctx, after) {
			c.read.Add(1)
			if !yield(fe, err) {
				return
			}
		}
	}
}

func (c *countingCore) Events(ctx context.Context, id string, after uint64) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for e, err := range c.Core.Events(ctx, id, after) {
			c.read.Add(1)
			if !yield(e, err) {
				return
			}
		}
	}
}

// reconnectSize logs size events (unpaced mock turns), then measures
// reps reconnects of each mode on them.
func reconnectSize(size, missed, reps int) ([2][]reconnectResult, error) {
	var out [2][]reconnectResult
	dir, err := os.MkdirTemp("", "daemonbench-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	c, err := openCore(dir, mock.Config{Outbox: 4096})
	if err != nil {
		return out, err
	}
	defer c.stop()
	o, err := fakeorchestrator.Start(fakeorchestrator.Options{Store: true})
	if err != nil {
		return out, err
	}
	defer o.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	info, err := c.m.Create(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: "reconnect"})
	if err != nil {
		return out, err
	}
	if err := waitStarted(ctx, c.m, info.ID); err != nil {
		return out, err
	}
	if _, err := runTurnsTo(ctx, c.m, info.ID, uint64(size)); err != nil {
		return out, err
	}
	for range reps {
		for m, mode := range reconnectModes {
			r, err := reconnectOnce(ctx, c, o, info.ID, mode.frames, uint64(missed))
			if err != nil {
				return out, fmt.Errorf("%s: %w", mode.name, err)
			}
			out[m] = append(out[m], r)
		}
	}
	return out, nil
}

// runTurnsTo runs turns until the session's log holds at least seq
// events, and returns its last seq.
func runTurnsTo(ctx context.Context, m *sessions.Manager, id string, seq uint64) (uint64, error) {
	for {
		s, err := m.Get(id)
		if err != nil || s.LastSeq >= seq {
			return s.LastSeq, err
		}
		if err := prompt(ctx, m, id); err != nil {
			return 0, err
		}
		for {
			now, err := m.Get(id)
			if err != nil {
				return 0, err
			}
			// Idle again after more events: turn.completed is logged.
			if now.State == sessions.StateIdle && now.LastSeq > s.LastSeq {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// reconnectOnce runs a daemon of the mode until the orchestrator has the
// session's last event, stops the orchestrator, logs missed more events,
// starts it again and times the daemon's return.
func reconnectOnce(ctx context.Context, c *core, o *fakeorchestrator.Server, id string, frames int, missed uint64) (reconnectResult, error) {
	var r reconnectResult
	counting := &countingCore{Core: c.m}
	var mu sync.Mutex
	var opened time.Time
	var syncs int
	o.Read(func(v fakeorchestrator.View) { syncs = len(v.SyncResponses()) })
	stopDaemon, err := runDaemon(c, o.URL(), func() { mu.Lock(); opened = time.Now(); mu.Unlock() }, func(cfg *mast.Config) {
		cfg.Service.Sessions, cfg.ReplayFrames = counting, frames
	})
	if err != nil {
		return r, err
	}
	defer stopDaemon()
	seen, err := c.m.Get(id)
	if err != nil {
		return r, err
	}
	// This daemon's first connection is answered (a projection has
	// folded the history by then) and the orchestrator is up to date.
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool { return len(v.SyncResponses()) > syncs }); err != nil {
		return r, err
	}
	if err := o.Wait(ctx, lastIs(seen.LastSeq)); err != nil {
		return r, err
	}
	before := counting.read.Load()
	o.Stop()
	last, err := runTurnsTo(ctx, c.m, id, seen.LastSeq+missed)
	if err != nil {
		return r, err
	}
	o.Read(func(v fakeorchestrator.View) { syncs = len(v.SyncResponses()) })
	if err := o.Start(); err != nil {
		return r, err
	}
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool { return len(v.SyncResponses()) > syncs }); err != nil {
		return r, err
	}
	synced := time.Now()
	if err := o.Wait(ctx, lastIs(last)); err != nil {
		return r, err
	}
	done := time.Now()
	mu.Lock()
	conn := opened
	mu.Unlock()
	return reconnectResult{logged: last, missed: last - seen.LastSeq, sync: synced.Sub(conn), replay: done.Sub(conn),
		read: counting.read.Load() - before}, nil
}

// lastIs says whether the orchestrator's newest event frame is of seq.
func lastIs(seq uint64) func(v fakeorchestrator.View) bool {
	return func(v fakeorchestrator.View) bool {
		ev := v.Events()
		if len(ev) == 0 {
			return false
		}
		data := ev[len(ev)-1]["event"].(map[string]any)["data"].(map[string]any)
		return uint64(data["seq"].(float64)) == seq
	}
}
