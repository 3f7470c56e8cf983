// Command shimbench measures the adapter-shim API's event stream (the
// frontend/shim package over a real runner core: event log, approvals,
// workspace) on loopback, with a scripted agent, and prints a table
// (docs/benchmarks.md):
//
//   - latency: from the moment the agent emits an event to the moment a
//     WS /events client has read it, p50/p99/max, with events paced
//     every -interval (the reference shims poll their buffer every 50 ms,
//     which alone adds up to 50 ms to each event);
//
//   - completeness: -n events of one run, as fast as the agent makes
//     them, read by two clients at once: how many each got, whether in
//     order, and how long it took (the reference keeps 1,000 and splits
//     the stream between clients);
//
//   - resume: a client reconnecting with runId and after, once the run
//     is done: the time to read the run's last events (after its last
//     ten) and its whole stream (after 0). The shim keeps no copy of the
//     events: a resume reads the run's events from the log.
//
//     go run ./bench/shimbench [-latency-events 2000] [-interval 2ms] [-n 10000]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/shimclient"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

func main() {
	latencyEvents := flag.Int("latency-events", 2000, "events of the latency run")
	interval := flag.Duration("interval", 2*time.Millisecond, "the pace of the latency run's events")
	n := flag.Int("n", 10_000, "events of the completeness run")
	flag.Parse()
	if err := run(*latencyEvents, *interval, *n); err != nil {
		fmt.Fprintln(os.Stderr, "shimbench:", err)
		os.Exit(1)
	}
}

func run(latencyEvents int, interval time.Duration, n int) error {
	lat, err := measure(&shimclient.FloodDriver{N: latencyEvents, Interval: interval}, 1)
	if err != nil {
		return err
	}
	full, err := measure(&shimclient.FloodDriver{N: n}, 2)
	if err != nil {
		return err
	}
	fmt.Printf("%-48s %s\n", "measure", "result")
	fmt.Printf("%-48s %s\n", strings.Repeat("-", 48), strings.Repeat("-", 40))
	d := lat.latencies[0]
	fmt.Printf("%-48s p50 %s  p99 %s  max %s\n", fmt.Sprintf("latency agent→client (%d events, %s apart)", latencyEvents, interval),
		pct(d, 50), pct(d, 99), pct(d, 100))
	fmt.Printf("%-48s %s (by design: a 50 ms poll)\n", "reference shims' added delay", "0–50 ms")
	for i, c := range full.clients {
		fmt.Printf("%-48s %d of %d messages, in order: %v\n", fmt.Sprintf("%d events, client %d of 2", n, i+1), c.got, n, c.inOrder)
	}
	fmt.Printf("%-48s %s (%.0f events/s per client)\n", fmt.Sprintf("%d events to both clients", n), full.elapsed.Round(time.Millisecond),
		float64(n)/full.elapsed.Seconds())
	fmt.Printf("%-48s %s\n", "resume after the run's last 10 events", full.resumes[0].Round(10*time.Microsecond))
	fmt.Printf("%-48s %s\n", fmt.Sprintf("resume after 0: the whole run (%d events)", n), full.resumes[1].Round(10*time.Microsecond))
	return nil
}

type clientResult struct {
	got     int
	inOrder bool
}

type result struct {
	latencies [][]time.Duration
	clients   []clientResult
	elapsed   time.Duration
	// resumes are the times to read the run's stream to its completion
	// from a reconnect after its last ten events, and after 0.
	resumes [2]time.Duration
}

// measure runs one spawn of d's turn with `clients` WS clients and
// collects what they read.
func measure(d agent.Driver, clients int) (result, error) {
	dir, err := os.MkdirTemp("", "shimbench-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	ws, err := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		return result{}, err
	}
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		return result{}, err
	}
	defer log.Close()
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), nil)
	if err != nil {
		return result{}, err
	}
	defer store.Close()
	m, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{d.Name(): d}, Workspaces: ws, Log: log, Approvals: store})
	if err != nil {
		return result{}, err
	}
	s, err := shim.New(shim.Config{Sessions: m, Agent: d.Name(), WorkspaceID: "bench"})
	if err != nil {
		return result{}, err
	}
	srv := httptest.NewServer(s.Handler())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer func() {
		cancel()
		_ = s.Close(context.Background())
		srv.CloseClientConnections()
		srv.Close()
		_ = m.Shutdown(context.Background())
	}()
	type read struct {
		lat     []time.Duration
		got     int
		inOrder bool
		run     string
		last    int64
		err     error
	}
	out := make(chan read, clients)
	ready := make(chan struct{}, clients)
	for range clients {
		go func() {
			var r read
			r.inOrder = true
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/events", nil)
			if err != nil {
				r.err = err
				ready <- struct{}{}
				out <- r
				return
			}
			defer conn.CloseNow()
			ready <- struct{}{}
			for {
				_, data, err := conn.Read(ctx)
				now := time.Now()
				if err != nil {
					r.err = err
					break
				}
				var env shimclient.Envelope
				if err := json.Unmarshal(data, &env); err != nil {
					r.err = err
					break
				}
				r.run, r.last = env.RunID, env.SourceSequence
				if env.Type() == "completion" {
					break
				}
				msg := env.Str("message")
				var i int
				if _, err := fmt.Sscanf(msg, "message %d", &i); err != nil {
					continue
				}
				if i != r.got {
					r.inOrder = false
				}
				r.got++
				at, err := time.Parse(time.RFC3339Nano, env.SourceOccurredAt)
				if err == nil {
					r.lat = append(r.lat, now.Sub(at))
				}
			}
			out <- r
		}()
	}
	for range clients {
		<-ready
	}
	began := time.Now()
	body := strings.NewReader(`{"agentId":"bench","role":"r","description":"go","workstream":"w","projectBrief":{"title":"t","description":"d"}}`)
	resp, err := srv.Client().Post(srv.URL+"/spawn", "application/json", body)
	if err != nil {
		return result{}, err
	}
	resp.Body.Close()
	var res result
	var last read
	for range clients {
		r := <-out
		if r.err != nil {
			return result{}, r.err
		}
		slices.Sort(r.lat)
		res.latencies = append(res.latencies, r.lat)
		res.clients = append(res.clients, clientResult{got: r.got, inOrder: r.inOrder})
		last = r
	}
	res.elapsed = time.Since(began)
	for i, after := range []int64{max(last.last-10, 0), 0} {
		if res.resumes[i], err = resume(ctx, srv.URL, last.run, after); err != nil {
			return result{}, err
		}
	}
	return res, nil
}

// resume is the time from a client's dial with runId and after to its
// reading the run's completion.
func resume(ctx context.Context, url, run string, after int64) (time.Duration, error) {
	began := time.Now()
	conn, _, err := websocket.Dial(ctx, fmt.Sprintf("ws%s/events?runId=%s&after=%d", strings.TrimPrefix(url, "http"), run, after), nil)
	if err != nil {
		return 0, err
	}
	defer conn.CloseNow()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return 0, err
		}
		var env shimclient.Envelope
		if err := json.Unmarshal(data, &env); err != nil {
			return 0, err
		}
		if env.Type() == "completion" {
			return time.Since(began), nil
		}
	}
}

func pct(sorted []time.Duration, p int) string {
	if len(sorted) == 0 {
		return "-"
	}
	i := (len(sorted) - 1) * p / 100
	return sorted[i].Round(10 * time.Microsecond).String()
}
