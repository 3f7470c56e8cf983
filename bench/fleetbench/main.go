// Command fleetbench measures what a fleet of runners on NATS JetStream
// costs against a lone runner, with the mock agent, all on loopback:
//
//   - latency: a session's events to a client on another runner than the
//     session's, against a client on its own runner, for turns as they
//     come (a burst after an idle moment);
//   - flood: events per second with mock sessions running turns back to
//     back, a lone runner against a runner with an embedded NATS node (the
//     fleet's cost on the same CPUs) and against a fleet of three;
//   - create: POST /v1/sessions to session.started, on a lone runner and
//     through a runner the fleet does not choose;
//   - memory: the runner's anonymous memory per idle session, lone and in
//     a fleet of three, whose runners embed its NATS nodes or, in a second
//     row, only connect to three nats-server processes (built from the
//     module tether pins); their own memory is a row of its own.
//
// Each runner is `tether serve` (built from this tree) with its own data
// directory. It prints a table; see docs/benchmarks.md.
//
//	go run ./bench/fleetbench [-turns 200] [-flood 10s] [-sessions 500]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nuid"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/internal/testing/natstest"
)

const token = "fleetbench-token-0123456789abcdef"

type config struct {
	turns, sessions, warmup, creates, floodSessions int
	flood, settle                                   time.Duration
	only                                            string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.turns, "turns", 200, "turns of the latency case")
	flag.DurationVar(&cfg.flood, "flood", 10*time.Second, "how long each flood runs")
	flag.IntVar(&cfg.floodSessions, "flood-sessions", 6, "sessions flooding each runner")
	flag.IntVar(&cfg.creates, "creates", 40, "sessions of the create case")
	flag.IntVar(&cfg.sessions, "sessions", 500, "idle sessions of the memory case")
	flag.IntVar(&cfg.warmup, "warmup", 2, "sessions the memory case opens before its baseline, not counted")
	flag.DurationVar(&cfg.settle, "settle", 5*time.Second, "how long the memory case's sessions idle before the reading")
	flag.StringVar(&cfg.only, "only", "", "run one case: latency, flood, create or memory")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	dir, err := os.MkdirTemp("", "fleetbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "tether")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/tether").CombinedOutput(); err != nil {
		return fmt.Errorf("building tether: %w\n%s", err, out)
	}
	b := &bench{bin: bin, dir: dir}
	defer b.stopAll()
	var rows [][]string
	for _, c := range []struct {
		name string
		run  func(config) ([][]string, error)
	}{{"latency", b.latency}, {"flood", b.floodCase}, {"create", b.create}, {"memory", b.memory}} {
		if cfg.only != "" && cfg.only != c.name {
			continue
		}
		r, err := c.run(cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		rows = append(rows, r...)
		b.stopAll()
	}
	fmt.Println("| measure | lone runner | fleet | ratio |")
	fmt.Println("|---|---:|---:|---:|")
	for _, r := range rows {
		fmt.Println("| " + strings.Join(r, " | ") + " |")
	}
	return nil
}

// bench starts and stops runners.
type bench struct {
	bin, dir string
	mu       sync.Mutex // runners start side by side
	n        int
	procs    []*exec.Cmd
}

// next numbers a process's directory.
func (b *bench) next() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	return b.n
}

func (b *bench) started(cmd *exec.Cmd) {
	b.mu.Lock()
	b.procs = append(b.procs, cmd)
	b.mu.Unlock()
}

type runner struct {
	cmd *exec.Cmd
	c   *client.Client
}

// start starts a runner with extra flags and waits until it listens.
func (b *bench) start(extra ...string) (*runner, error) {
	data := filepath.Join(b.dir, fmt.Sprintf("runner%d", b.next()))
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--sandbox", "off", "--data", data, "--max-sessions", "0"}, extra...)
	cmd := exec.Command(b.bin, args...)
	cmd.Env = append(os.Environ(), "TETHER_AUTH_TOKEN="+token)
	cmd.Dir = b.dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b.started(cmd)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if _, rest, ok := strings.Cut(line, `msg="runner listening" addr=`); ok {
				a, _, _ := strings.Cut(rest, " ")
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return &runner{cmd: cmd, c: &client.Client{BaseURL: "http://" + a, Token: token, Timeout: time.Minute}}, nil
	case <-time.After(2 * time.Minute):
		return nil, fmt.Errorf("runner %v did not listen", extra)
	}
}

// fleet starts n runners, each with an embedded node of one cluster.
func (b *bench) fleet(n int) ([]*runner, error) {
	confs, _, err := natstest.Cluster(filepath.Join(b.dir, fmt.Sprintf("cluster%d", b.next())), n)
	if err != nil {
		return nil, err
	}
	out := make([]*runner, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = b.start("--nats-config", confs[i], "--runner-name", fmt.Sprintf("r%d", i))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, waitActive(out[0].c, n)
}

// external starts n nats-server processes in one cluster and n runners
// that only connect to them; it returns the servers' pids too.
func (b *bench) external(n int) ([]*runner, []int, error) {
	srv := filepath.Join(b.dir, "nats-server")
	if _, err := os.Stat(srv); err != nil {
		if err := natstest.BuildServer(srv); err != nil {
			return nil, nil, err
		}
	}
	confs, ports, err := natstest.Cluster(filepath.Join(b.dir, fmt.Sprintf("cluster%d", b.next())), n)
	if err != nil {
		return nil, nil, err
	}
	var urls []string
	var pids []int
	for i, conf := range confs {
		cmd := exec.Command(srv, "-c", conf)
		if err := cmd.Start(); err != nil {
			return nil, nil, err
		}
		b.started(cmd)
		pids = append(pids, cmd.Process.Pid)
		if err := natstest.WaitListening(ports[i], time.Minute); err != nil {
			return nil, nil, err
		}
		urls = append(urls, natstest.URL(ports[i]))
	}
	out := make([]*runner, n)
	for i := range n {
		if out[i], err = b.start("--nats", strings.Join(urls, ","), "--runner-name", fmt.Sprintf("r%d", i)); err != nil {
			return nil, nil, err
		}
	}
	return out, pids, waitActive(out[0].c, n)
}

func waitActive(c *client.Client, n int) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		list, err := c.Runners(context.Background())
		active := 0
		for _, r := range list {
			if r.State == "active" {
				active++
			}
		}
		if err == nil && active == n {
			return nil
		}
	}
	return fmt.Errorf("the fleet's %d runners are not all active", n)
}

func (b *bench) stopAll() {
	for _, p := range b.procs {
		_ = p.Process.Kill()
		_ = p.Wait()
	}
	b.procs = nil
}

// latency runs turns on a session of r0, read at once through r0 and
// through r1, each after an idle moment; latency is an event's arrival
// less its own time.
func (b *bench) latency(cfg config) ([][]string, error) {
	fl, err := b.fleet(3)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	s, err := fl[0].c.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "lat", Runner: "r0"})
	if err != nil {
		return nil, err
	}
	var own, other []time.Duration
	var wg sync.WaitGroup
	turnDone := make(chan struct{}, 2*cfg.turns)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, r := range []struct {
		c   *client.Client
		out *[]time.Duration
	}{{fl[0].c, &own}, {fl[1].c, &other}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e, err := range r.c.Events(rctx, s.ID, 0, 0) {
				if err != nil {
					return
				}
				*r.out = append(*r.out, time.Since(e.Time))
				if e.Kind == agent.KindTurnCompleted {
					turnDone <- struct{}{}
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	for range cfg.turns {
		time.Sleep(50 * time.Millisecond)
		if err := fl[0].c.Prompt(ctx, s.ID, "hello"); err != nil {
			return nil, err
		}
		for range 2 {
			select {
			case <-turnDone:
			case <-time.After(30 * time.Second):
				return nil, fmt.Errorf("a turn's events did not reach both readers")
			}
		}
	}
	cancel()
	wg.Wait()
	return [][]string{
		{fmt.Sprintf("event latency p50, a client on the session's runner / on another (%d turns, %d events)", cfg.turns, len(own)),
			pct(own, 50).String(), pct(other, 50).String(), ratio(pct(other, 50), pct(own, 50))},
		{"event latency p99, the same", pct(own, 99).String(), pct(other, 99).String(), ratio(pct(other, 99), pct(own, 99))},
	}, nil
}

// floodCase: events per second of mock sessions running turns back to
// back, each read through its own runner.
func (b *bench) floodCase(cfg config) ([][]string, error) {
	lone, err := b.start()
	if err != nil {
		return nil, err
	}
	loneRate, err := flood([]*runner{lone}, cfg)
	if err != nil {
		return nil, err
	}
	b.stopAll()
	one, err := b.fleet(1)
	if err != nil {
		return nil, err
	}
	oneRate, err := flood(one, cfg)
	if err != nil {
		return nil, err
	}
	b.stopAll()
	three, err := b.fleet(3)
	if err != nil {
		return nil, err
	}
	threeRate, err := flood(three, cfg)
	if err != nil {
		return nil, err
	}
	return [][]string{
		{fmt.Sprintf("events/s, %d mock sessions flooding a runner, lone / with its embedded NATS node (a fleet of one)", cfg.floodSessions),
			fmt.Sprintf("%.0f", loneRate), fmt.Sprintf("%.0f", oneRate), fmt.Sprintf("%.2f×", oneRate/loneRate)},
		{fmt.Sprintf("events/s, a fleet of three (%d sessions each, all on the same 2 CPUs): total / per runner against lone", cfg.floodSessions),
			fmt.Sprintf("%.0f", loneRate), fmt.Sprintf("%.0f (%.0f per runner)", threeRate, threeRate/3), fmt.Sprintf("%.2f×", threeRate/3/loneRate)},
	}, nil
}

func flood(runners []*runner, cfg config) (float64, error) {
	ctx := context.Background()
	var events atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, len(runners)*cfg.floodSessions)
	var wg sync.WaitGroup
	for i, r := range runners {
		for j := range cfg.floodSessions {
			s, err := r.c.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: fmt.Sprintf("f%d-%d", i, j), Runner: runnerName(runners, i)})
			if err != nil {
				return 0, err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- turns(ctx, r.c, s.ID, stop, &events)
			}()
		}
	}
	time.Sleep(time.Second) // warm
	start, n0 := time.Now(), events.Load()
	time.Sleep(cfg.flood)
	rate := float64(events.Load()-n0) / time.Since(start).Seconds()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return rate, nil
}

func runnerName(runners []*runner, i int) string {
	if len(runners) == 1 && !slices.Contains(runners[0].cmd.Args, "--nats-config") {
		return ""
	}
	return "r" + strconv.Itoa(i)
}

// turns runs a session's turns back to back until stop, counting the
// events its reader gets.
func turns(ctx context.Context, c *client.Client, id string, stop <-chan struct{}, events *atomic.Int64) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{}, 1)
	go func() {
		for e, err := range c.Events(rctx, id, 0, 0) {
			if err != nil {
				return
			}
			events.Add(1)
			if e.Kind == agent.KindTurnCompleted {
				done <- struct{}{}
			}
		}
	}()
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		err := c.Prompt(ctx, id, "hello")
		for tries := 0; err != nil && tries < 100; tries++ { // the last turn still ending
			time.Sleep(time.Millisecond)
			err = c.Prompt(ctx, id, "hello")
		}
		if err != nil {
			return err
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("a turn of %s did not complete", id)
		}
	}
}

// create times POST /v1/sessions (it returns once the agent started:
// session.started is logged).
func (b *bench) create(cfg config) ([][]string, error) {
	lone, err := b.start()
	if err != nil {
		return nil, err
	}
	loneT, err := creates(lone.c, cfg.creates, "")
	if err != nil {
		return nil, err
	}
	b.stopAll()
	fl, err := b.fleet(3)
	if err != nil {
		return nil, err
	}
	fleetT, err := creates(fl[0].c, cfg.creates, "r1")
	if err != nil {
		return nil, err
	}
	return [][]string{{fmt.Sprintf("POST /v1/sessions → session.started, median of %d (fleet: through r0, placed on r1)", cfg.creates),
		pct(loneT, 50).String(), pct(fleetT, 50).String(), ratio(pct(fleetT, 50), pct(loneT, 50))}}, nil
}

func creates(c *client.Client, n int, on string) ([]time.Duration, error) {
	var out []time.Duration
	for range n {
		t0 := time.Now()
		if _, err := c.Create(context.Background(), client.CreateRequest{Agent: "mock", WorkspaceID: "c" + nuid.Next(), Runner: on}); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// memory: the runner's RssAnon per idle session, lone and as r0 of a
// fleet of three (its embedded node included).
func (b *bench) memory(cfg config) ([][]string, error) {
	lone, err := b.start()
	if err != nil {
		return nil, err
	}
	loneKiB, _, err := perSession(lone, cfg.warmup, cfg.sessions, "", cfg.settle)
	if err != nil {
		return nil, err
	}
	b.stopAll()
	fl, err := b.fleet(3)
	if err != nil {
		return nil, err
	}
	fleetKiB, _, err := perSession(fl[0], cfg.warmup, cfg.sessions, "r0", cfg.settle)
	if err != nil {
		return nil, err
	}
	b.stopAll()
	ext, servers, err := b.external(3)
	if err != nil {
		return nil, err
	}
	extKiB, serversKiB, err := perSession(ext[0], cfg.warmup, cfg.sessions, "r0", cfg.settle, servers...)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("%d sessions after %d not counted, read after %v idle", cfg.sessions, cfg.warmup, cfg.settle)
	return [][]string{
		{"runner RssAnon per idle mock session, its runner embedding a NATS node (" + what + ")",
			fmt.Sprintf("%.1f KiB", loneKiB), fmt.Sprintf("%.1f KiB", fleetKiB), fmt.Sprintf("%.2f×", fleetKiB/loneKiB)},
		{"the same, the runners connecting to three nats-server processes",
			fmt.Sprintf("%.1f KiB", loneKiB), fmt.Sprintf("%.1f KiB", extKiB), fmt.Sprintf("%.2f×", extKiB/loneKiB)},
		{"those three nats-server processes' RssAnon per session, together", "—", fmt.Sprintf("%.1f KiB", serversKiB), "—"},
	}, nil
}

// perSession opens warmup sessions, reads the runner's RssAnon, opens n
// more and reads it again after settle: the warm-up's sessions carry the
// runtime's first collections and the node's first stream blocks, costs
// a runner pays once. It reads the processes others (together) at the
// same moments.
func perSession(r *runner, warmup, n int, on string, settle time.Duration, others ...int) (runnerKiB, othersKiB float64, err error) {
	if _, err := creates(r.c, warmup, on); err != nil {
		return 0, 0, err
	}
	time.Sleep(2 * time.Second)
	before, err := rssAnonSum(r.cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	othersBefore, err := rssAnonSum(others...)
	if err != nil {
		return 0, 0, err
	}
	if _, err := creates(r.c, n, on); err != nil {
		return 0, 0, err
	}
	time.Sleep(settle) // heartbeats, registry writes, the stream's caches
	after, err := rssAnonSum(r.cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	othersAfter, err := rssAnonSum(others...)
	if err != nil {
		return 0, 0, err
	}
	return float64(after-before) / float64(n), float64(othersAfter-othersBefore) / float64(n), nil
}

// rssAnonSum is the anonymous resident memory of processes pids, together,
// in KiB.
func rssAnonSum(pids ...int) (int64, error) {
	var sum int64
	for _, pid := range pids {
		kib, err := rssAnon(pid)
		if err != nil {
			return 0, err
		}
		sum += kib
	}
	return sum, nil
}

// rssAnon reads a process's anonymous resident memory in KiB.
func rssAnon(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no RssAnon for %d", pid)
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(time.Microsecond)
}

func ratio(a, b time.Duration) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}
