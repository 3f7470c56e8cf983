// Command agentsbench measures what an idle session of each agent kind
// costs the runner: the runner's own resident memory (its process, not
// the agent's) per session, with N sessions of one kind idle after their
// start, and how long a session takes from create to session.started.
// Each kind gets a fresh runner: this program in its "runner" mode, i.e.
// server.Run as tether serve runs it (sandbox off), with the pinned real
// CLIs against fake model APIs on loopback (the mock needs none). The
// first -warmup sessions are opened before the baseline and not counted:
// they page in what every later session shares. It prints a table; see
// docs/benchmarks.md. AGENTSBENCH_RUNNER_HEAPPROFILE=FILE writes each
// runner's live heap (every allocation sampled) and goroutines beside
// FILE once its sessions are idle.
//
//	go run ./bench/agentsbench [-n 20] [-n-mock 1000] [-agents mock,claude,codex,opencode]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/internal/gcfloor"
	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/server"
)

// token is the runner's bearer token in this benchmark (loopback only).
const token = "agentsbench-token-0123456789abcdef"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "runner" {
		if err := runRunner(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "agentsbench runner:", err)
			os.Exit(1)
		}
		return
	}
	n := flag.Int("n", 20, "idle sessions of each agent with a real CLI")
	nMock := flag.Int("n-mock", 1000, "idle sessions of the mock agent")
	warmup := flag.Int("warmup", 2, "sessions opened before the baseline, not counted")
	settle := flag.Duration("settle", 0, "also read the runner's memory after the sessions have been idle this long (130s: past the runtime's periodic collection)")
	agents := flag.String("agents", "mock,claude,codex,opencode", "the agent kinds to measure, comma-separated")
	flag.Parse()
	if err := run(strings.Split(*agents, ","), *n, *nMock, *warmup, *settle); err != nil {
		fmt.Fprintln(os.Stderr, "agentsbench:", err)
		os.Exit(1)
	}
}

type result struct {
	kind           string
	sessions       int
	perSession     float64 // KiB of the runner's RSS
	anonPerSession float64 // KiB of its anonymous part
	startMedian    time.Duration
	startP90       time.Duration
}

func run(kinds []string, n, nMock, warmup int, settle time.Duration) error {
	fakes, err := startFakes()
	if err != nil {
		return err
	}
	defer fakes.close()
	var results []result
	for _, kind := range kinds {
		count := n
		if kind == "mock" {
			count = nMock
		}
		r, err := measure(kind, count, warmup, settle, fakes)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		results = append(results, r)
		fmt.Fprintf(os.Stderr, "%s: %d sessions, %.1f KiB each (%.1f KiB anonymous)\n", kind, r.sessions, r.perSession, r.anonPerSession)
	}
	fmt.Println("| agent | idle sessions | runner RSS per session | of it anonymous | create → session.started, median | p90 |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Printf("| %s | %d | %.1f KiB | %.1f KiB | %v | %v |\n", r.kind, r.sessions, r.perSession, r.anonPerSession,
			r.startMedian.Round(100*time.Microsecond), r.startP90.Round(100*time.Microsecond))
	}
	return nil
}

// fakes are the model APIs and the operator configuration that points
// the agents at them.
type fakes struct {
	anthropic *fakeanthropic.Server
	openai    *fakeopenai.Server
	home      string
	env       []string // the runner's environment
	clis      map[string]string
}

func startFakes() (*fakes, error) {
	f := &fakes{clis: map[string]string{}}
	var err error
	if f.anthropic, err = fakeanthropic.Start(fakeanthropic.Options{}); err != nil {
		return nil, err
	}
	if f.openai, err = fakeopenai.Start(fakeopenai.Options{}); err != nil {
		f.close()
		return nil, err
	}
	if f.home, err = os.MkdirTemp("", "agentsbench-home-"); err != nil {
		f.close()
		return nil, err
	}
	env := map[string]string{"PATH": os.Getenv("PATH")}
	add := func(kv []string, keep func(string) bool) {
		for _, e := range kv {
			if k, v, _ := strings.Cut(e, "="); keep(k) {
				env[k] = v
			}
		}
	}
	add(testenv.ClaudeEnv(f.home, f.anthropic.URL()), func(k string) bool { return k != "HOME" && k != "PATH" })
	codexEnv, err := testenv.CodexEnv(f.home, f.openai.URL())
	if err != nil {
		f.close()
		return nil, err
	}
	add(codexEnv, func(k string) bool { return k == "CODEX_HOME" || k == "OPENAI_API_KEY" })
	ocEnv, err := testenv.OpenCodeEnv(f.home, f.openai.URL(), false)
	if err != nil {
		f.close()
		return nil, err
	}
	add(ocEnv, func(k string) bool {
		return k == "XDG_CONFIG_HOME" || k == "npm_config_registry" || strings.HasPrefix(k, "OPENCODE_")
	})
	for k, v := range env {
		f.env = append(f.env, k+"="+v)
	}
	for kind, find := range map[string]func() (string, bool){"claude": testenv.FindClaudeCLI, "codex": testenv.FindCodexCLI, "opencode": testenv.FindOpenCodeCLI} {
		if p, ok := find(); ok {
			f.clis[kind] = p
		}
	}
	return f, nil
}

func (f *fakes) close() {
	if f.anthropic != nil {
		_ = f.anthropic.Close()
	}
	if f.openai != nil {
		_ = f.openai.Close()
	}
	if f.home != "" {
		_ = os.RemoveAll(f.home)
	}
}

// measure starts a runner, opens count idle sessions of kind, and reads
// the runner's RSS before and after them (after warmup sessions that are
// not counted).
func measure(kind string, count, warmup int, settle time.Duration, f *fakes) (result, error) {
	if kind != "mock" && f.clis[kind] == "" {
		return result{}, fmt.Errorf("the pinned %s CLI is not installed (scripts/install-agents)", kind)
	}
	dir, err := os.MkdirTemp("/var/tmp", "agentsbench-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	args := []string{"runner", "-data", dir}
	for k, p := range f.clis {
		args = append(args, "-cli", k+"="+p)
	}
	if p := os.Getenv("AGENTSBENCH_RUNNER_HEAPPROFILE"); p != "" {
		args = append(args, "-heapprofile", filepath.Join(filepath.Dir(p), kind+"-"+filepath.Base(p)))
	}
	cmd := exec.Command(self, args...)
	cmd.Env = f.env
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	addr, err := readyAddr(out)
	if err != nil {
		return result{}, err
	}
	c := &client.Client{BaseURL: "http://" + addr, Token: token}
	time.Sleep(time.Second) // let the runner settle before its baseline
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The first sessions of a runner also page in the code and the log's
	// pages that every later one shares: a one-off, not a session's cost.
	if _, err := openIdle(ctx, c, kind, 0, warmup); err != nil {
		return result{}, err
	}
	time.Sleep(time.Second)
	before := readRSS(cmd.Process.Pid)
	starts, err := openIdle(ctx, c, kind, warmup, count)
	if err != nil {
		return result{}, err
	}
	time.Sleep(2 * time.Second) // idle: whatever the starts left behind settles
	after := readRSS(cmd.Process.Pid)
	if settle > 0 {
		// An idle runner's memory, once the runtime's periodic collection
		// (every two minutes) and its scavenger have run.
		time.Sleep(settle)
		settled := readRSS(cmd.Process.Pid)
		fmt.Fprintf(os.Stderr, "%s: after %v idle: %.1f KiB per session (%.1f KiB anonymous)\n", kind, settle,
			float64(settled.total-before.total)/float64(count), float64(settled.anon-before.anon)/float64(count))
	}
	if os.Getenv("AGENTSBENCH_RUNNER_HEAPPROFILE") != "" {
		_ = cmd.Process.Signal(syscall.SIGUSR1)
		time.Sleep(time.Second)
	}
	slices.Sort(starts)
	return result{kind: kind, sessions: count,
		perSession:     float64(after.total-before.total) / float64(count),
		anonPerSession: float64(after.anon-before.anon) / float64(count),
		startMedian:    starts[len(starts)/2], startP90: starts[len(starts)*9/10]}, nil
}

// openIdle opens count sessions of kind one after another, each once it
// has said session.started, and returns how long each took.
func openIdle(ctx context.Context, c *client.Client, kind string, first, count int) ([]time.Duration, error) {
	var starts []time.Duration
	for i := first; i < first+count; i++ {
		began := time.Now()
		s, err := c.Create(ctx, client.CreateRequest{Agent: kind, WorkspaceID: fmt.Sprintf("w%d", i)})
		if err != nil {
			return nil, err
		}
		if err := untilStarted(ctx, c, s.ID); err != nil {
			return nil, err
		}
		starts = append(starts, time.Since(began))
	}
	return starts, nil
}

func untilStarted(ctx context.Context, c *client.Client, id string) error {
	for e, err := range c.Events(ctx, id, 0, 0) {
		if err != nil {
			return err
		}
		if e.Kind == agent.KindSessionStarted {
			return nil
		}
		if e.Kind == agent.KindSessionEnded {
			return fmt.Errorf("session %s ended at its start: %+v", id, e.Error)
		}
	}
	return errors.New("the event stream ended")
}

func readyAddr(out interface{ Read([]byte) (int, error) }) (string, error) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
			return addr, nil
		}
	}
	return "", errors.New("the runner ended before it was ready")
}

// runRunner is the runner process: server.Run as tether serve runs it,
// with its heap floor.
func runRunner(args []string) error {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	data := fs.String("data", "", "data directory")
	floor := fs.Int64("gc-heap-floor", gcfloor.Default, "as tether serve's flag")
	heap := fs.String("heapprofile", "", "write the runner's live heap to `FILE` when it ends")
	var clis []string
	fs.Func("cli", "KIND=PATH", func(v string) error { clis = append(clis, v); return nil })
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := server.Config{Addr: "127.0.0.1:0", DataDir: *data, CLIs: map[string]string{},
		AgentEnv: []string{"npm_config_registry"}, InitializeTimeout: time.Minute,
		Auth:   auth.LoadOptions{Tokens: []string{token}, Getenv: func(string) string { return "" }},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Ready:  func(addr string) { fmt.Println("READY " + addr) }}
	for _, v := range clis {
		kind, path := server.ParseCLIFlag(v)
		cfg.CLIs[kind] = path
	}
	defer gcfloor.Start(uint64(max(*floor, 0))).Stop()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if *heap != "" {
		runtime.MemProfileRate = 1 // every allocation: the sessions' are small
		// Written on SIGUSR1, which the benchmark sends once its sessions
		// are idle: the profile is of them, not of a runner shutting down.
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		defer signal.Stop(usr1)
		go func() {
			select {
			case <-usr1:
				writeHeap(*heap)
			case <-ctx.Done():
			}
		}()
	}
	return server.Run(ctx, cfg)
}

func writeHeap(path string) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentsbench runner:", err)
		return
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "agentsbench runner:", err)
	}
	if g, err := os.Create(path + ".goroutines.txt"); err == nil {
		_ = pprof.Lookup("goroutine").WriteTo(g, 1)
		g.Close()
	}
	samples := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"}, {Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"}, {Name: "/memory/classes/total:bytes"},
		{Name: "/gc/gogc:percent"},
	}
	metrics.Read(samples)
	fmt.Fprintf(os.Stderr, "agentsbench runner: %d goroutines", runtime.NumGoroutine())
	for _, m := range samples {
		fmt.Fprintf(os.Stderr, ", %s %d KiB", m.Name, m.Value.Uint64()>>10)
	}
	fmt.Fprintln(os.Stderr)
}

// rss is a process's resident set in KiB: all of it, and its anonymous
// part (heap and stacks, not the file pages of the binary and the log).
type rss struct{ total, anon int64 }

func readRSS(pid int) rss {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return rss{}
	}
	var r rss
	for _, l := range strings.Split(string(data), "\n") {
		name, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch name {
		case "VmRSS":
			r.total = n
		case "RssAnon":
			r.anon = n
		}
	}
	return r
}
