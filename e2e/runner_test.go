package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/sandbox"
	"github.com/tetherhq/tether/server"
)

// testRunner is a real runner (server.Run: auth, event log, workspaces, the
// Claude Code driver, protocol v1) on loopback, with the real CLI talking to
// a fake model API.
type testRunner struct {
	URL     string // ws://127.0.0.1:PORT/sessions
	Token   string
	Root    string // workspaces root (real path)
	Data    string // the runner's data directory (event log, homes)
	Fake    *fakeanthropic.Server
	Sandbox bool
	logs    *testenv.SyncBuffer
}

// agentEnvPrefixes are the variables server.Run forwards to agents by
// prefix; any inherited ones are cleared so only ClaudeEnv reaches the CLI.
var agentEnvPrefixes = []string{"ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_", "MCP_", "OPENAI_", "OPENCODE_", "CODEX_"}

// startRunner starts a runner in-process. It sets the process environment
// (t.Setenv), so tests using it cannot run in parallel.
func startRunner(t *testing.T, withSandbox bool) *testRunner {
	t.Helper()
	return startRunnerEnv(t, withSandbox, nil)
}

// startRunnerEnv is startRunner with extra variables in the runner's
// environment (which server.Run forwards to agents by prefix).
func startRunnerEnv(t *testing.T, withSandbox bool, extraEnv map[string]string) *testRunner {
	t.Helper()
	return startRunnerWith(t, withSandbox, extraEnv, nil)
}

// startRunnerWith is startRunnerEnv with the runner's Config adjusted by
// configure (other agents' CLIs, say) before it starts.
func startRunnerWith(t *testing.T, withSandbox bool, extraEnv map[string]string, configure func(*server.Config)) *testRunner {
	t.Helper()
	began := time.Now()
	cli := testenv.RequireClaudeCLI(t)
	if withSandbox {
		requireBwrap(t)
	}
	fake, err := fakeanthropic.Start(fakeanthropic.Options{SlowChunkDelay: 100 * time.Millisecond, SlowChunks: 100})
	if err != nil {
		t.Fatal(err)
	}
	// Not under /tmp: the sandbox mounts its own /tmp, which would hide
	// the runner's directories whether or not its Hide list works.
	base, err := os.MkdirTemp("/var/tmp", "tether-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	if base, err = filepath.EvalSymlinks(base); err != nil {
		t.Fatal(err)
	}
	clearAgentEnv(t)
	for _, kv := range testenv.ClaudeEnv("/nonexistent", fake.URL()) {
		k, v, _ := strings.Cut(kv, "=")
		if k != "HOME" { // the driver gives each workspace its own
			t.Setenv(k, v)
		}
	}
	for k, v := range extraEnv {
		t.Setenv(k, v)
	}
	tr := &testRunner{Token: randomToken(), Root: filepath.Join(base, "workspaces"), Data: filepath.Join(base, "data"),
		Fake: fake, Sandbox: withSandbox, logs: &testenv.SyncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	cfg := server.Config{
		Addr: "127.0.0.1:0", WorkspaceRoot: tr.Root, DataDir: tr.Data, CLIPath: cli, Sandbox: withSandbox,
		GracePeriod: 30 * time.Second, ShutdownTimeout: 20 * time.Second, InitializeTimeout: 60 * time.Second,
		Auth:   auth.LoadOptions{Getenv: func(string) string { return "" }, Tokens: []string{tr.Token}},
		Logger: slog.New(slog.NewTextHandler(tr.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Ready:  func(addr string) { ready <- addr },
	}
	if configure != nil {
		configure(&cfg)
	}
	go func() { done <- server.Run(ctx, cfg) }()
	select {
	case addr := <-ready:
		tr.URL = "ws://" + addr + "/sessions"
	case err := <-done:
		cancel()
		_ = fake.Close()
		_ = os.RemoveAll(base)
		t.Fatalf("server.Run: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runner shutdown: %v", err)
		}
		_ = fake.Close()
		if t.Failed() || os.Getenv("TETHER_E2E_RUNNER_LOG") != "" {
			t.Logf("runner log:\n%s", tr.logs.String())
		}
		_ = os.RemoveAll(base)
	})
	t.Logf("runner up (sandbox %v) in %v", withSandbox, time.Since(began).Round(time.Millisecond))
	return tr
}

// WorkspaceDir is where the runner keeps workspace id (the CLI's cwd).
func (tr *testRunner) WorkspaceDir(id string) string { return filepath.Join(tr.Root, id) }

// HomeDir is workspace id's private home (the CLI's HOME).
func (tr *testRunner) HomeDir(id string) string { return filepath.Join(tr.Data, "homes", id) }

func clearAgentEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		for _, p := range agentEnvPrefixes {
			if strings.HasPrefix(k, p) {
				t.Setenv(k, "") // restores the old value afterwards
				os.Unsetenv(k)
			}
		}
	}
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var workspaceSeq atomic.Int64

// newWorkspaceID is a fresh workspace id, unique in the test binary.
func newWorkspaceID(prefix string) string {
	return prefix + "-" + strconv.FormatInt(workspaceSeq.Add(1), 10)
}

func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skipf("bubblewrap is not installed: %v", err)
	}
	if err := sandbox.Available(); err != nil {
		t.Fatal(err)
	}
}

// listener is a TCP listener on loopback that counts the connections it
// accepts: a Bash command that reaches it had network.
type listener struct {
	ln       net.Listener
	accepted atomic.Int32
	wg       sync.WaitGroup
}

func listen(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{ln: ln}
	l.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			_, _ = c.Write([]byte("hello from the host\n"))
			_ = c.Close()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		l.wg.Wait()
	})
	return l
}

// connectScript is a bash script that says whether it reached l.
func (l *listener) connectScript() string {
	port := strconv.Itoa(l.ln.Addr().(*net.TCPAddr).Port)
	return "if exec 3<>/dev/tcp/127.0.0.1/" + port + "; then read -r line <&3; echo \"connected: $line\"; else echo refused; fi"
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// timed logs how long a scenario took.
func timed(t *testing.T) {
	t.Helper()
	start := time.Now()
	t.Cleanup(func() { t.Logf("TIMING %s: %v", t.Name(), time.Since(start).Round(time.Millisecond)) })
}
