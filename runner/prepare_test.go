package runner_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/runner"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/workspace"
)

// gatedGit is a git whose commits wait until release is called: the
// "before" snapshot of a session is held while the test looks.
type gatedGit struct {
	path string
	fifo string
}

func newGatedGit(t *testing.T) *gatedGit {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not found")
	}
	dir := t.TempDir()
	g := &gatedGit{path: filepath.Join(dir, "git"), fifo: filepath.Join(dir, "gate")}
	if err := syscall.Mkfifo(g.fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncase \" $* \" in *\" commit \"*) read _ < '" + g.fifo + "';; esac\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(g.path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return g
}

// release lets one waiting commit through (it waits for one to wait).
func (g *gatedGit) release(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(g.fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// seed puts a file in workspace id before its first session, so that its
// snapshots need git (a new, empty one's first one does not).
func (f *prepFixture) seed(t *testing.T, id string) {
	t.Helper()
	dir := filepath.Join(f.root, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("seeded"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// prepFixture is a runner whose workspaces use git at gitPath ("" for
// the real one).
type prepFixture struct {
	r    *runner.Runner
	log  *eventlog.Log
	root string
	opts workspace.Options
}

func newPrepFixture(t *testing.T, drv runner.AgentDriver, gitPath string) *prepFixture {
	t.Helper()
	dir := t.TempDir()
	elog, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &prepFixture{log: elog, root: filepath.Join(dir, "ws"),
		opts: workspace.Options{HomesRoot: filepath.Join(dir, "homes"), GitPath: gitPath}}
	ws, err := workspace.New(f.root, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	if f.r, err = runner.New(runner.Config{Log: elog, Workspaces: ws, Driver: drv}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.r.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		elog.Close()
	})
	return f
}

func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Open returns once the agent has started, while the workspace's
// "before" snapshot is still being taken; Prepared holds whatever would
// reach the agent until the snapshot is in.
func TestOpenDoesNotWaitForTheSnapshot(t *testing.T) {
	git := newGatedGit(t)
	f := newPrepFixture(t, &fakeDriver{}, git.path)
	f.seed(t, "w")
	s, err := f.r.Open(guard(t), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Prepared(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Prepared while the snapshot is held: %v, want the context's error", err)
	}
	git.release(t)
	if err := s.Prepared(guard(t)); err != nil {
		t.Fatalf("Prepared: %v", err)
	}
	out, err := exec.Command("git", "--git-dir="+filepath.Join(f.root, ".tether", "git", "w.git"), "log", "--format=%s").Output()
	if err != nil || strings.TrimSpace(string(out)) != "tether: before session "+s.ID() {
		t.Fatalf("snapshots: %q, %v", out, err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		s.End("test")
	}()
	git.release(t) // the "after" snapshot of End
	within(t, 30*time.Second, ended, "session to end")
}

// An agent that fails to start stops the workspace's preparation and
// gives the workspace back, even with a git that would hang.
func TestAgentStartFailureStopsPreparation(t *testing.T) {
	git := newGatedGit(t)
	boom := errors.New("no agent today")
	f := newPrepFixture(t, &fakeDriver{fail: boom}, git.path)
	f.seed(t, "w")
	if _, err := f.r.Open(guard(t), runner.OpenRequest{WorkspaceID: "w"}); !errors.Is(err, boom) {
		t.Fatalf("Open: %v", err)
	}
	m, err := workspace.New(f.root, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Claim(guard(t), "w")
	if err != nil {
		t.Fatalf("workspace after the failed start: %v", err)
	}
	w.Release()
}

// A workspace whose repository cannot be made still has a session (its
// agent started meanwhile), and Prepared says what is wrong.
func TestWorkspacePreparationFailure(t *testing.T) {
	f := newPrepFixture(t, &fakeDriver{}, "")
	if err := os.WriteFile(filepath.Join(f.root, ".tether", "git", "w.git"), []byte("not a repository"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := f.r.Open(guard(t), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Prepared(guard(t)); !errors.Is(err, runner.ErrWorkspace) {
		t.Fatalf("Prepared: %v, want ErrWorkspace", err)
	}
	s.End("test")
}

// A host that saw events a crash lost resumes with its last seq: the
// session numbers on after it. A last seq no crash explains is refused.
func TestResumeNumbersOnAfterTheHost(t *testing.T) {
	f := newPrepFixture(t, &fakeDriver{}, "")
	s, err := f.r.Open(guard(t), runner.OpenRequest{WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.Append(guard(t), []byte("e")); err != nil {
			t.Fatal(err)
		}
	}
	s.End("test")
	s, err = f.r.Open(guard(t), runner.OpenRequest{Resume: s.ID(), LastSeq: 7})
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := s.Append(guard(t), []byte("after")); err != nil || seq != 8 {
		t.Fatalf("first event after the resume: seq %d, %v; want 8", seq, err)
	}
	var seqs []uint64
	for ev, err := range f.log.Read(guard(t), s.ID(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ev.Seq)
	}
	if len(seqs) != 4 || seqs[2] != 3 || seqs[3] != 8 {
		t.Fatalf("the log holds seqs %v, want 1 2 3 8", seqs)
	}
	s.End("test")
	if _, err := f.r.Open(guard(t), runner.OpenRequest{Resume: s.ID(), LastSeq: 1 << 40}); !errors.Is(err, runner.ErrAhead) {
		t.Fatalf("resume far past the log: %v, want ErrAhead", err)
	}
	if _, err := f.r.Open(guard(t), runner.OpenRequest{Resume: s.ID(), LastSeq: 8}); err != nil {
		t.Fatalf("resume at the log's end: %v", err)
	}
}
