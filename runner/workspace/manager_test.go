package workspace_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tetherhq/tether/runner/workspace"
)

func TestFirstUseCreatesAndInits(t *testing.T) {
	m := newManager(t)
	want := filepath.Join(m.Root(), "agent_abc123")
	if _, err := os.Stat(want); !os.IsNotExist(err) {
		t.Fatalf("workspace exists before first use: %v", err)
	}
	w := acquire(t, m, "agent_abc123")
	if w.ID() != "agent_abc123" || w.Path() != want {
		t.Fatalf("id %q path %q", w.ID(), w.Path())
	}
	if got := mode(t, w.Path()); got != 0o700 {
		t.Fatalf("workspace mode %o", got)
	}
	// The repository is initialized, outside the work tree, with its
	// identity and exclude file, and no commit yet.
	if _, err := os.Stat(filepath.Join(w.Path(), ".git")); !os.IsNotExist(err) {
		t.Fatalf(".git inside the work tree: %v", err)
	}
	if !filepath.IsAbs(w.GitDir()) || filepath.Dir(filepath.Dir(w.GitDir())) == w.Path() {
		t.Fatalf("git dir %s", w.GitDir())
	}
	if got := git(t, w, "config", "user.email"); got != workspace.DefaultGitEmail {
		t.Fatalf("user.email = %q", got)
	}
	if got := git(t, w, "rev-parse", "--show-toplevel"); got != w.Path() {
		t.Fatalf("work tree is %q", got)
	}
	if _, err := w.Git(ctx(t), "rev-parse", "--verify", "HEAD"); !errors.Is(err, workspace.ErrGit) {
		t.Fatalf("HEAD exists before the first snapshot: %v", err)
	}
	if hooks, _ := os.ReadDir(filepath.Join(w.GitDir(), "hooks")); len(hooks) != 0 {
		t.Fatalf("sample hooks installed: %v", hooks)
	}
	if b, err := os.ReadFile(filepath.Join(w.GitDir(), "info", "exclude")); err != nil || len(b) == 0 {
		t.Fatalf("exclude: %q %v", b, err)
	}
}

func TestHome(t *testing.T) {
	m := newManager(t)
	h, err := m.Home("agent_1")
	if err != nil {
		t.Fatal(err)
	}
	if h != filepath.Join(m.HomesRoot(), "agent_1") || mode(t, h) != 0o700 {
		t.Fatalf("home %s", h)
	}
	if err := os.WriteFile(filepath.Join(h, ".claude.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := m.Home("agent_1")
	if err != nil || again != h {
		t.Fatalf("second Home: %s %v", again, err)
	}
	if _, err := os.Stat(filepath.Join(h, ".claude.json")); err != nil {
		t.Fatal("home not kept:", err)
	}
	for _, id := range []string{"..", "../x", "a/b", ""} {
		if _, err := m.Home(id); !errors.Is(err, workspace.ErrInvalidID) {
			t.Errorf("Home(%q) = %v", id, err)
		}
	}
}

func TestAcquireRejectsInvalidIDs(t *testing.T) {
	m := newManager(t)
	for _, id := range []string{"..", "../x", "a/b", ".", "\x00", "\n", "-rf", ".tether"} {
		if w, err := m.Acquire(ctx(t), id); !errors.Is(err, workspace.ErrInvalidID) {
			if w != nil {
				w.Release()
			}
			t.Errorf("Acquire(%q) = %v", id, err)
		}
	}
	entries, _ := os.ReadDir(m.Root())
	if len(entries) != 1 || entries[0].Name() != workspace.PrivateDir {
		t.Fatalf("root holds %v", entries)
	}
}

func TestPersistsAcrossAcquire(t *testing.T) {
	m := newManager(t)
	w := acquire(t, m, "ws")
	write(t, w, "notes.txt", "one")
	first := snapshot(t, w, "first")
	w.Release()

	w2 := acquire(t, m, "ws")
	if b, err := os.ReadFile(filepath.Join(w2.Path(), "notes.txt")); err != nil || string(b) != "one" {
		t.Fatalf("file after re-acquire: %q %v", b, err)
	}
	if commits(t, w2) != 1 || git(t, w2, "rev-parse", "HEAD") != first {
		t.Fatal("history lost across Release/Acquire")
	}
	snapshot(t, w2, "second")
	if commits(t, w2) != 2 {
		t.Fatalf("commits = %d", commits(t, w2))
	}
}

func TestBusy(t *testing.T) {
	m := newManager(t)
	w := acquire(t, m, "ws")
	_, err := m.Acquire(ctx(t), "ws")
	var be *workspace.BusyError
	if !errors.Is(err, workspace.ErrBusy) || !errors.As(err, &be) || be.ID != "ws" {
		t.Fatalf("second Acquire: %v", err)
	}
	// Another manager on the same root (another runner process) is
	// excluded too: the lock is a file lock.
	m2, err := workspace.New(m.Root(), workspace.Options{HomesRoot: m.HomesRoot()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Acquire(ctx(t), "ws"); !errors.Is(err, workspace.ErrBusy) {
		t.Fatalf("Acquire from a second manager: %v", err)
	}
	other := acquire(t, m, "other") // other ids are independent
	other.Release()

	w.Release()
	w.Release() // idempotent
	if _, err := w.Snapshot(ctx(t), "late"); !errors.Is(err, workspace.ErrReleased) {
		t.Fatalf("Snapshot after Release: %v", err)
	}
	if _, err := w.Git(ctx(t), "status"); !errors.Is(err, workspace.ErrReleased) {
		t.Fatalf("Git after Release: %v", err)
	}
	w3 := acquire(t, m2, "ws")
	w3.Release()
}

func TestConcurrentAcquire(t *testing.T) {
	m := newManager(t)
	const n = 16
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		winner []*workspace.Workspace
		busy   int
		others []error
	)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			w, err := m.Acquire(context.Background(), "race")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winner = append(winner, w)
			case errors.Is(err, workspace.ErrBusy):
				busy++
			default:
				others = append(others, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(winner) != 1 || busy != n-1 || len(others) != 0 {
		t.Fatalf("%d won, %d busy, errors %v", len(winner), busy, others)
	}
	// The single winner initialized a working repository.
	write(t, winner[0], "f", "x")
	snapshot(t, winner[0], "after race")
	winner[0].Release()
}

func TestAcquireCanceled(t *testing.T) {
	m := newManager(t)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Acquire(c, "ws"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a canceled ctx: %v", err)
	}
	acquire(t, m, "ws").Release() // the lock was not kept
}

func TestNewValidates(t *testing.T) {
	base := t.TempDir()
	cases := map[string]struct {
		root string
		opts workspace.Options
	}{
		"no homes":      {filepath.Join(base, "a"), workspace.Options{}},
		"no root":       {"", workspace.Options{HomesRoot: filepath.Join(base, "h")}},
		"homes in root": {filepath.Join(base, "b"), workspace.Options{HomesRoot: filepath.Join(base, "b", "homes")}},
		"root in homes": {filepath.Join(base, "c", "ws"), workspace.Options{HomesRoot: filepath.Join(base, "c")}},
		"same dir":      {filepath.Join(base, "d"), workspace.Options{HomesRoot: filepath.Join(base, "d")}},
		"git not found": {filepath.Join(base, "e"), workspace.Options{HomesRoot: filepath.Join(base, "eh"), GitPath: filepath.Join(base, "no-git")}},
	}
	for name, c := range cases {
		if _, err := workspace.New(c.root, c.opts); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	m, err := workspace.New(filepath.Join(base, "fresh", "ws"), workspace.Options{HomesRoot: filepath.Join(base, "fresh", "homes")})
	if err != nil {
		t.Fatal(err)
	}
	if mode(t, m.Root()) != 0o700 || mode(t, m.HomesRoot()) != 0o700 {
		t.Fatal("roots not created 0700")
	}
}

// The repository is written without git; git reads it as its own, with
// an identity that needs quoting.
func TestRepositoryIdentityQuoted(t *testing.T) {
	base := t.TempDir()
	name, email := `Tèther "the" \ runner; #1`, "runner+ws@example.com"
	m, err := workspace.New(filepath.Join(base, "ws"), workspace.Options{HomesRoot: filepath.Join(base, "h"), GitName: name, GitEmail: email})
	if err != nil {
		t.Fatal(err)
	}
	w := acquire(t, m, "quoted")
	write(t, w, "a.txt", "a")
	c := snapshot(t, w, "s")
	if who := git(t, w, "log", "-1", "--format=%an <%ae>", c); who != name+" <"+email+">" {
		t.Fatalf("author %q", who)
	}
	if out := git(t, w, "fsck", "--strict"); out != "" {
		t.Fatalf("fsck: %s", out)
	}
}

// Claim takes the workspace and makes its directory, and leaves the
// repository to the first Prepare, Snapshot or Git.
func TestClaimDefersTheRepository(t *testing.T) {
	m := newManager(t)
	w, err := m.Claim(ctx(t), "later")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Release)
	if mode(t, w.Path()) != 0o700 {
		t.Fatal("no work tree")
	}
	if _, err := os.Stat(w.GitDir()); !os.IsNotExist(err) {
		t.Fatalf("repository before first use: %v", err)
	}
	if _, err := m.Claim(ctx(t), "later"); !errors.Is(err, workspace.ErrBusy) {
		t.Fatalf("second Claim: %v", err)
	}
	write(t, w, "a.txt", "a")
	snapshot(t, w, "first") // makes the repository first
	if got := git(t, w, "show", "HEAD:a.txt"); got != "a" {
		t.Fatalf("snapshot holds %q", got)
	}
	if err := w.Prepare(ctx(t)); err != nil {
		t.Fatal(err)
	}
	w.Release()
	if err := w.Prepare(ctx(t)); !errors.Is(err, workspace.ErrReleased) {
		t.Fatalf("Prepare after Release: %v", err)
	}
}
