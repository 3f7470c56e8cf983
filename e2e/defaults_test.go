package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/runner/auth"
)

// The runner as the README starts it: `tether serve --cli CLI` in an empty
// directory, every other setting its default (the sandbox on, the data in
// ./tether-data; only the port is a free one), then `tether run --runner`
// from another directory. Both are the real binary; the agent is the real
// CLI against a fake model API.
//
// Without TETHER_AUTH_TOKEN the runner generates a token and `tether run`
// on the same machine finds it; with it set, both use it. Before, every
// init failed (`sandbox: policy Hide: "tether-data/workspaces" is not
// absolute`), and without a token the runner refused to start.
func TestRealCLIDefaultsReadmeFlow(t *testing.T) {
	timed(t)
	cli := testenv.RequireClaudeCLI(t)
	requireBwrap(t)
	tether := buildTether(t)
	fake, err := fakeanthropic.Start(fakeanthropic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	for _, tc := range []struct {
		name  string
		token string // TETHER_AUTH_TOKEN of both processes ("": unset)
	}{
		{"GeneratedToken", ""},
		{"TokenFromEnvironment", randomToken()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			timed(t)
			// Both processes are one user's on one machine: the same
			// runtime directory, where the runner records its token file.
			runtimeDir := t.TempDir()
			env := []string{auth.EnvRuntimeDir + "=" + runtimeDir}
			if tc.token != "" {
				env = append(env, auth.EnvToken+"="+tc.token)
			}
			dir := t.TempDir()
			rn := startTetherServe(t, tether, dir, append(testenv.ClaudeEnv(t.TempDir(), fake.URL()), env...),
				"serve", "--cli", cli, "--addr", "127.0.0.1:0")
			tokenFile := filepath.Join(dir, "tether-data", auth.GeneratedTokenFile)
			_, statErr := os.Stat(tokenFile)
			if generated := statErr == nil; generated != (tc.token == "") {
				t.Fatalf("token file there: %v, want %v\n%s", generated, tc.token == "", rn.log.String())
			}

			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			run := exec.CommandContext(ctx, tether, "run", "--runner", "ws://"+rn.addr+"/sessions", "--approve=allow", "hello from the defaults")
			run.Dir = t.TempDir()
			run.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + t.TempDir()}, env...)
			var stdout, stderr bytes.Buffer
			run.Stdout, run.Stderr = &stdout, &stderr
			if err := run.Run(); err != nil {
				t.Fatalf("tether run: %v\nstdout:\n%s\nstderr:\n%s\nrunner:\n%s", err, stdout.String(), stderr.String(), rn.log.String())
			}
			if !strings.Contains(stdout.String(), "Hello! You said: hello from the defaults") {
				t.Fatalf("no answer from the agent:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
			log := rn.log.String()
			if !strings.Contains(log, `msg="session started"`) || !strings.Contains(log, "workspace=default") {
				t.Errorf("no session start in the runner's log:\n%s", log)
			}
			if tc.token == "" {
				data, _ := os.ReadFile(tokenFile)
				if tok := strings.TrimSpace(string(data)); len(tok) != 64 || strings.Contains(log, tok) {
					t.Errorf("token of %d chars; in the log: %v", len(tok), strings.Contains(log, tok))
				}
			} else if strings.Contains(log, tc.token) {
				t.Error("the token shows in the runner's log")
			}
			rn.stop(t)
			// The record that let tether run find the token is gone with
			// the runner.
			if records, _ := filepath.Glob(filepath.Join(runtimeDir, "tether", "runners", "*.json")); len(records) != 0 {
				t.Errorf("runner records left: %v", records)
			}
		})
	}
}

// buildTether builds cmd/tether into a directory of the test's.
func buildTether(t *testing.T) string {
	t.Helper()
	root, ok := testenv.ModuleRoot()
	if !ok {
		t.Fatal("cannot find the module root")
	}
	out := filepath.Join(t.TempDir(), "tether")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/tether")
	build.Dir = root
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building tether: %v\n%s", err, msg)
	}
	return out
}

// serveChild is a `tether serve` process.
type serveChild struct {
	cmd    *exec.Cmd
	addr   string
	log    *addrWatcher
	exited chan error
}

var listeningRE = regexp.MustCompile(`msg="runner listening" addr=(\S+)`)

// addrWatcher keeps a runner's stderr and hands over the address of its
// "runner listening" line once.
type addrWatcher struct {
	testenv.SyncBuffer
	once sync.Once
	addr chan string
}

func (w *addrWatcher) Write(p []byte) (int, error) {
	n, err := w.SyncBuffer.Write(p)
	if m := listeningRE.FindStringSubmatch(w.String()); m != nil {
		w.once.Do(func() { w.addr <- m[1] })
	}
	return n, err
}

// startTetherServe starts tether with args in dir and waits, up to a
// minute, for it to say where it listens. The test's end stops it.
func startTetherServe(t *testing.T, tether, dir string, env []string, args ...string) *serveChild {
	t.Helper()
	cmd := exec.Command(tether, args...)
	cmd.Dir, cmd.Env = dir, env
	w := &addrWatcher{addr: make(chan string, 1)}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &serveChild{cmd: cmd, log: w, exited: make(chan error, 1)}
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() { s.stop(t) })
	select {
	case s.addr = <-w.addr:
	case err := <-s.exited:
		s.exited <- err
		t.Fatalf("tether serve exited: %v\n%s", err, w.String())
	case <-time.After(time.Minute):
		t.Fatalf("tether serve did not say where it listens:\n%s", w.String())
	}
	return s
}

// stop ends the runner with SIGTERM (killing it after 30 s) and waits.
func (s *serveChild) stop(t *testing.T) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		s.exited <- err
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		s.exited <- <-s.exited
		t.Errorf("tether serve did not stop within 30 s of SIGTERM:\n%s", s.log.String())
	}
}
