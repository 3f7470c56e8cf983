// Command eventsbench measures what the sessions API adds to an agent's
// events: the latency from the moment a driver hands over an event to the
// moment an API client on loopback has decoded it (paced events, p50 and
// p99), and the throughput of a burst, through the whole path — the
// sessions core numbering and logging each event, the SSE stream, the Go
// client. The agent is a stand-in driver in this program, so the figures
// are the runner's, not an agent's. It prints a table; see
// docs/benchmarks.md.
//
// The turns case prompts the mock agent again and again, each prompt after
// an idle moment, and measures each event from its own time (the driver
// made it) to its arrival: the events of a turn as they really come.
//
//	go run ./bench/eventsbench [-n 5000] [-interval 200us] [-burst 100000] [-turns 200] [-data /dev/shm]
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/frontend/sessionsapi"
	"github.com/tetherhq/tether/internal/gcfloor"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

func main() {
	n := flag.Int("n", 5000, "paced events for the latency case")
	interval := flag.Duration("interval", 200*time.Microsecond, "pause between paced events")
	burst := flag.Int("burst", 100_000, "events for the throughput case")
	nTurns := flag.Int("turns", 200, "the mock's turns for the turns case (a burst of events each, after an idle moment)")
	idle := flag.Duration("idle", 50*time.Millisecond, "the idle moment before each turn")
	dataDir := flag.String("data", os.TempDir(), "where the data directory goes (a tmpfs such as /dev/shm takes the disk out)")
	floor := flag.Int64("heap-floor", gcfloor.Default, "the heap floor in `BYTES`, as tether serve --gc-heap-floor (0: none)")
	flag.Parse()
	// As in tether serve: while events flow fast, the collector does not
	// run below the floor.
	defer gcfloor.Start(uint64(max(*floor, 0))).Stop()
	if err := run(*dataDir, *n, *interval, *burst, *nTurns, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "eventsbench:", err)
		os.Exit(1)
	}
}

func run(parent string, n int, interval time.Duration, burst, nTurns int, idle time.Duration) error {
	dir, err := os.MkdirTemp(parent, "eventsbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	base, stop, err := serve(dir)
	if err != nil {
		return err
	}
	defer stop()
	c := &client.Client{BaseURL: base}
	lat, err := latency(c, n, interval)
	if err != nil {
		return err
	}
	written := diskWrites()
	rate, err := throughput(c, burst)
	if err != nil {
		return err
	}
	written = diskWrites() - written
	tr, err := turns(c, nTurns, idle)
	if err != nil {
		return err
	}
	fmt.Println("| measure | result | target |")
	fmt.Println("|---|---:|---|")
	fmt.Printf("| event latency p50, driver → API client on loopback (%d events, one per %v) | %v | — |\n", n, interval, lat[0])
	fmt.Printf("| event latency p99 | %v | ≤ 1 ms |\n", lat[1])
	fmt.Printf("| event latency max | %v | — |\n", lat[2])
	fmt.Printf("| burst of %d events, driver → API client | %.0f events/s | — |\n", burst, rate)
	fmt.Printf("| bytes written to disk per event of the burst (the log, its commits; /proc/self/io) | %.0f | — |\n", float64(written)/float64(burst))
	fmt.Printf("| turns as they come: %d turns of the mock (%d events), each after %v idle; latency p50 (arrival less the event's time) | %v | — |\n",
		tr.turns, tr.events, idle, tr.all[0])
	fmt.Printf("| the same, p99 | %v | ≤ 1 ms |\n", tr.all[1])
	fmt.Printf("| the same, max | %v | — |\n", tr.all[2])
	fmt.Printf("| turn.started alone, p50 / p99 | %v / %v | — |\n", tr.started[0], tr.started[1])
	return nil
}

// diskWrites is what this process has had written to storage so far
// (write_bytes of /proc/self/io), 0 where that cannot be read.
func diskWrites() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// serve starts the sessions core and its API on loopback.
func serve(dir string) (string, func(), error) {
	ws, err := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		return "", nil, err
	}
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		return "", nil, err
	}
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), nil)
	if err != nil {
		log.Close()
		return "", nil, err
	}
	m, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{"paced": pacedDriver{}, "mock": mock.New(mock.Config{})},
		Workspaces: ws, Log: log, Approvals: store})
	if err != nil {
		store.Close()
		log.Close()
		return "", nil, err
	}
	srv := httptest.NewServer(sessionsapi.Handler(sessionsapi.Config{Sessions: m}))
	return srv.URL, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = m.Shutdown(ctx)
		srv.Close()
		store.Close()
		log.Close()
	}, nil
}

// latency runs one paced turn and returns p50, p99 and max.
func latency(c *client.Client, n int, interval time.Duration) ([3]time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := c.Create(ctx, client.CreateRequest{Agent: "paced", WorkspaceID: "latency",
		Prompt: fmt.Sprintf("%d %d", n, interval.Nanoseconds())})
	if err != nil {
		return [3]time.Duration{}, err
	}
	var lats []time.Duration
	for e, err := range c.Events(ctx, s.ID, 0, 0) {
		if err != nil {
			return [3]time.Duration{}, err
		}
		if e.Kind == agent.KindItemDelta {
			lats = append(lats, time.Since(sentAt(e)))
		}
		if e.Kind == agent.KindTurnCompleted {
			break
		}
	}
	_ = c.Close(ctx, s.ID)
	slices.Sort(lats)
	if len(lats) == 0 {
		return [3]time.Duration{}, fmt.Errorf("no events arrived")
	}
	at := func(q float64) time.Duration { return lats[min(len(lats)-1, int(q*float64(len(lats))))] }
	return [3]time.Duration{at(0.50), at(0.99), lats[len(lats)-1]}, nil
}

// throughput runs one unpaced turn and returns events per second.
func throughput(c *client.Client, n int) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	s, err := c.Create(ctx, client.CreateRequest{Agent: "paced", WorkspaceID: "burst", Prompt: fmt.Sprintf("%d 0", n)})
	if err != nil {
		return 0, err
	}
	got := 0
	for e, err := range c.Events(ctx, s.ID, 0, 0) {
		if err != nil {
			return 0, err
		}
		got++
		if e.Kind == agent.KindTurnCompleted {
			break
		}
	}
	rate := float64(got) / time.Since(began).Seconds()
	_ = c.Close(ctx, s.ID)
	return rate, nil
}
