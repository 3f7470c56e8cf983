package runview

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/mockclaude"
	"go.uber.org/goleak"
)

// teeEnv names a file the mock copies its stdout to, so a test can compare
// what Run printed with what the mock wrote.
const teeEnv = "TETHER_CONSOLE_TEST_TEE"

// waitLimit bounds every run so a hang fails the test instead.
const waitLimit = 30 * time.Second

// TestMain makes this test binary the mock agent when Run starts it
// (console.UseMock sets mockclaude.EnvMain), and checks for leaks otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockMain())
	}
	goleak.VerifyTestMain(m)
}

func mockMain() int {
	path := os.Getenv(teeEnv)
	if path == "" {
		return mockclaude.Main()
	}
	f, err := os.Create(path)
	if err != nil {
		return 3
	}
	defer f.Close()
	cfg := mockclaude.ConfigFromEnv(os.Args[1:], os.Getenv)
	cfg.Cwd, _ = os.Getwd()
	return mockclaude.Run(context.Background(), os.Stdin, io.MultiWriter(os.Stdout, f), os.Stderr, cfg)
}

// output is a goroutine-safe buffer that signals its first write, and
// the first write after which it holds a text a test waits for.
type output struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
	once  sync.Once
	waits map[string]chan struct{}
}

func newOutput() *output {
	return &output{first: make(chan struct{}), waits: map[string]chan struct{}{}}
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.once.Do(func() { close(o.first) })
	n, err := o.buf.Write(p)
	for text, ch := range o.waits {
		if bytes.Contains(o.buf.Bytes(), []byte(text)) {
			close(ch)
			delete(o.waits, text)
		}
	}
	return n, err
}

// holds is closed once the output holds text.
func (o *output) holds(text string) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch := make(chan struct{})
	if bytes.Contains(o.buf.Bytes(), []byte(text)) {
		close(ch)
	} else {
		o.waits[text] = ch
	}
	return ch
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// mockRun is one Run against the mock as a subprocess.
type mockRun struct {
	t   *testing.T
	cfg Config
	out *output
	err *output
	dir string // the agent's working directory
}

// newMockRun prepares a run of prompt in a fresh directory with the mock
// in scenario (empty: demo) and env added to its environment.
func newMockRun(t *testing.T, scenario string, env map[string]string) *mockRun {
	t.Helper()
	dir := t.TempDir()
	e := map[string]string{
		mockclaude.EnvScenario: scenario,
		// A -race binary sleeps 1s before exiting by default; the mock is one.
		"GORACE": "atexit_sleep_ms=0",
	}
	for k, v := range env {
		e[k] = v
	}
	opts := UseMock(claude.Options{Cwd: dir, Env: e}, os.Args[0])
	r := &mockRun{t: t, out: newOutput(), err: newOutput(), dir: dir}
	r.cfg = Config{Options: opts, Prompt: "hello", Out: r.out, Err: r.err, Approve: ApproveAllow}
	return r
}

func (r *mockRun) run() int {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	code := Run(ctx, r.cfg)
	if ctx.Err() != nil {
		r.t.Fatalf("Run did not end within %s; out:\n%s\nerr:\n%s", waitLimit, r.out, r.err)
	}
	return code
}

// lines are the output's lines, without the trailing empty one.
func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// inOrder reports whether each of want occurs in s after the one before.
func inOrder(s string, want ...string) bool {
	for _, w := range want {
		i := strings.Index(s, w)
		if i < 0 {
			return false
		}
		s = s[i+len(w):]
	}
	return true
}

// stepClock returns start, then start+step, start+2·step, …
func stepClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now := t
		t = t.Add(step)
		return now
	}
}
