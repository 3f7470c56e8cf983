package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/sandbox"
)

// requireBwrap skips only when bwrap is not installed; a bwrap that is
// installed but cannot build the sandbox is a failure.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skipf("bubblewrap is not installed (apt-get install bubblewrap): %v", err)
	}
	if err := sandbox.Available(); err != nil {
		t.Fatal(err)
	}
}

// fixture is a runner's layout: a workspaces root with the agent's
// workspace "a" and another one "b", a homes root, and the runner's data.
// It lives under /var/tmp, not /tmp: the sandbox mounts its own /tmp, which
// would hide a fixture there whether or not Hide works.
type fixture struct {
	base, root, ws, other, homes, home, data string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	parent := "/var/tmp"
	if _, err := os.Stat(parent); err != nil {
		t.Fatalf("need %s for sandbox fixtures: %v", parent, err)
	}
	base, err := os.MkdirTemp(parent, "tether-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	f := &fixture{
		base:  base,
		root:  filepath.Join(base, "workspaces"),
		homes: filepath.Join(base, "homes"),
		data:  filepath.Join(base, "data"),
	}
	f.ws, f.other, f.home = filepath.Join(f.root, "a"), filepath.Join(f.root, "b"), filepath.Join(f.homes, "a")
	for _, d := range []string{f.ws, f.other, f.home, filepath.Join(f.homes, "b"), f.data} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(f.other, "secret.txt"), "other workspace")
	writeFile(t, filepath.Join(f.homes, "b", "session.jsonl"), "other home")
	writeFile(t, filepath.Join(f.data, "runner.db"), "runner data")
	return f
}

// policy is the runner's usual policy for workspace a.
func (f *fixture) policy() sandbox.Policy {
	return sandbox.Policy{
		Workspace: f.ws, Home: f.home,
		Hide: []string{f.root, f.homes, f.data},
		Env:  map[string]string{"LANG": "C"},
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs path args inside the sandbox and waits for it.
func run(t *testing.T, p sandbox.Policy, path string, args ...string) result {
	t.Helper()
	sc, err := p.Wrap(path, args)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := command(ctx, sc)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// command is the exec.Cmd of a sandboxed command.
func command(ctx context.Context, sc *sandbox.Command) *exec.Cmd {
	cmd := exec.CommandContext(ctx, sc.Path, sc.Args...)
	cmd.Env, cmd.ExtraFiles = sc.Env, sc.Files
	return cmd
}

// sh runs a /bin/sh script inside the sandbox; bash the same with bash.
func sh(t *testing.T, p sandbox.Policy, script string) result {
	t.Helper()
	return run(t, p, "/bin/sh", "-c", script)
}

func bash(t *testing.T, p sandbox.Policy, script string) result {
	t.Helper()
	return run(t, p, "/bin/bash", "-c", script)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// listener is a TCP listener on the host's loopback that counts the
// connections it accepts.
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

func (l *listener) port() int { return l.ln.Addr().(*net.TCPAddr).Port }
