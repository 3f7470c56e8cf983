package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/runner/workspace"
)

func TestSnapshotBeforeAfter(t *testing.T) {
	m := newManager(t)
	w := acquire(t, m, "ws")
	write(t, w, "keep.txt", "same")
	write(t, w, "edit.txt", "v1")
	write(t, w, "gone.txt", "bye")
	before := snapshot(t, w, "tether: before session s1")

	// The "session": add, modify, delete, and a nested file.
	write(t, w, "edit.txt", "v2")
	write(t, w, "scripts/new.sh", "echo hi")
	if err := os.Remove(filepath.Join(w.Path(), "gone.txt")); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, w, "tether: after session s1")

	if commits(t, w) != 2 || before == after {
		t.Fatalf("commits %d, before %s after %s", commits(t, w), before, after)
	}
	diff := git(t, w, "diff", "--name-status", before, after)
	want := "M\tedit.txt\nD\tgone.txt\nA\tscripts/new.sh"
	if diff != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", diff, want)
	}
	if msg := git(t, w, "log", "-1", "--format=%s|%an|%ae", after); msg != "tether: after session s1|"+workspace.DefaultGitName+"|"+workspace.DefaultGitEmail {
		t.Fatalf("commit: %q", msg)
	}
	if got := git(t, w, "show", after+":edit.txt"); got != "v2" {
		t.Fatalf("edit.txt at after = %q", got)
	}

	// Nothing changed: still a commit, with an empty diff.
	idle := snapshot(t, w, "")
	if commits(t, w) != 3 || git(t, w, "diff", "--name-status", after, idle) != "" {
		t.Fatal("empty snapshot not committed or not empty")
	}
}

func TestSnapshotExcludesPrivateFiles(t *testing.T) {
	base := t.TempDir()
	m, err := workspace.New(filepath.Join(base, "ws"), workspace.Options{HomesRoot: filepath.Join(base, "h"), Exclude: []string{"*.runner-tmp"}})
	if err != nil {
		t.Fatal(err)
	}
	w := acquire(t, m, "ws")
	write(t, w, workspace.PrivateDir+"/state.json", "{}")
	write(t, w, "x.runner-tmp", "tmp")
	write(t, w, "real.txt", "content")
	c := snapshot(t, w, "s")
	if files := git(t, w, "ls-tree", "-r", "--name-only", c); files != "real.txt" {
		t.Fatalf("committed files: %q", files)
	}
}

// The agent owns its work tree and may plant anything in it, including
// what would be hooks, config or filters if the repository lived there.
// Snapshots, which run outside any sandbox, must run none of it.
func TestSnapshotIgnoresPlantedGitFiles(t *testing.T) {
	m := newManager(t)
	w := acquire(t, m, "ws")
	pwned := filepath.Join(t.TempDir(), "pwned")
	hook := "#!/bin/sh\ntouch " + pwned + "\n"
	write(t, w, ".git/hooks/pre-commit", hook)
	write(t, w, ".git/hooks/post-commit", hook)
	write(t, w, ".git/config", "[core]\n\tfsmonitor = touch "+pwned+"\n\thooksPath = .git/hooks\n[filter \"evil\"]\n\tclean = touch "+pwned+"\n")
	write(t, w, ".gitattributes", "* filter=evil\n")
	write(t, w, "hooks/pre-commit", hook)
	for _, name := range []string{".git/hooks/pre-commit", ".git/hooks/post-commit", "hooks/pre-commit"} {
		_ = os.Chmod(filepath.Join(w.Path(), name), 0o755)
	}
	write(t, w, "data.txt", "x")
	c := snapshot(t, w, "s")
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Fatal("a planted hook, fsmonitor or filter ran during Snapshot")
	}
	files := git(t, w, "ls-tree", "-r", "--name-only", c)
	if strings.Contains(files, ".git/") || !strings.Contains(files, "data.txt") {
		t.Fatalf("committed: %q", files)
	}
}

func TestGitIgnoresInheritedEnvironment(t *testing.T) {
	m := newManager(t)
	w := acquire(t, m, "ws")
	elsewhere := t.TempDir()
	t.Setenv("GIT_DIR", elsewhere)
	t.Setenv("GIT_WORK_TREE", elsewhere)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(elsewhere, "index"))
	t.Setenv("GIT_AUTHOR_NAME", "Mallory")
	t.Setenv("GIT_COMMITTER_EMAIL", "mallory@example.com")
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hooksPath'='/nonexistent'")
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = FromHome\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	write(t, w, "a.txt", "a")
	c := snapshot(t, w, "s")
	if who := git(t, w, "log", "-1", "--format=%an <%ae>|%cn <%ce>", c); who != "Tether <tether@localhost>|Tether <tether@localhost>" {
		t.Fatalf("identity leaked in: %q", who)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("git wrote to GIT_DIR from the environment: %v", entries)
	}
}

func TestSnapshotBoundedByContext(t *testing.T) {
	m := newManager(t)
	w := acquire(t, m, "ws")
	c, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := w.Snapshot(c, "s")
	if !errors.Is(err, workspace.ErrGit) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Snapshot with a canceled ctx: %v", err)
	}
	// A stale index.lock (a git killed mid-add) does not wedge the next one.
	if err := os.WriteFile(filepath.Join(w.GitDir(), "index.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	snapshot(t, w, "after")
}

// initializedWithGit makes workspace "ws" with the real git, for a test
// that then runs another git on it: it returns the test's directory, the
// workspaces root and the homes root.
func initializedWithGit(t *testing.T) (base, root, homes string) {
	t.Helper()
	base = t.TempDir()
	root, homes = filepath.Join(base, "ws"), filepath.Join(base, "h")
	m, err := workspace.New(root, workspace.Options{HomesRoot: homes})
	if err != nil {
		t.Fatal(err)
	}
	acquire(t, m, "ws").Release()
	return base, root, homes
}

func TestGitTimeout(t *testing.T) {
	base, root, homes := initializedWithGit(t)
	// A git whose commit hangs.
	slow := filepath.Join(base, "slow-git")
	script := "#!/bin/sh\ncase \" $* \" in *\" commit \"*) exec sleep 30;; esac\nexec git \"$@\"\n"
	if err := os.WriteFile(slow, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	m2, err := workspace.New(root, workspace.Options{HomesRoot: homes, GitPath: slow, GitTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w := acquire(t, m2, "ws")
	write(t, w, "a.txt", "a") // not an empty tree: git commits it
	start := time.Now()
	_, err = w.Snapshot(context.Background(), "s")
	var ge *workspace.GitError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ge) || ge.Args[2] != "commit" || time.Since(start) > 10*time.Second {
		t.Fatalf("Snapshot with a hung git: %v after %v", err, time.Since(start))
	}
}

func TestSnapshotConcurrentWithRelease(t *testing.T) {
	m := newManager(t)
	w, err := m.Acquire(ctx(t), "ws")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.Snapshot(ctx(t), "s")
		done <- err
	}()
	w.Release()
	if err := <-done; err != nil && !errors.Is(err, workspace.ErrReleased) {
		t.Fatal(err)
	}
	acquire(t, m, "ws").Release()
}

// A new workspace's first snapshot is written without git; git reads it
// as its own (fsck), and the snapshots after it build on it.
func TestFirstSnapshotOfANewWorkspace(t *testing.T) {
	m := newManager(t)
	w := acquire(t, m, "fresh")
	root := snapshot(t, w, "tether: before session s1")
	if got := git(t, w, "rev-parse", "--verify", "HEAD"); got != root {
		t.Fatalf("HEAD %s, snapshot %s", got, root)
	}
	if got := git(t, w, "log", "--format=%T|%an <%ae>|%s"); got != "4b825dc642cb6eb9a060e54bf8d69288fbee4904|Tether <tether@localhost>|tether: before session s1" {
		t.Fatalf("root commit: %q", got)
	}
	if out := git(t, w, "fsck", "--strict", "--no-dangling"); out != "" {
		t.Fatalf("fsck: %s", out)
	}
	write(t, w, "a.txt", "a")
	next := snapshot(t, w, "tether: after session s1")
	if parent := git(t, w, "rev-parse", next+"^"); parent != root {
		t.Fatalf("the next snapshot's parent is %s, want %s", parent, root)
	}
	if got := git(t, w, "show", "HEAD:a.txt"); got != "a" {
		t.Fatalf("a.txt: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(w.GitDir(), "logs")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a snapshot by git kept a reflog: %v", err)
	}
	// The directories initRepo leaves to git are made when git needs
	// them: a tag, a repack, and fsck after both.
	git(t, w, "tag", "v1")
	git(t, w, "gc", "-q")
	if out := git(t, w, "fsck", "--strict", "--no-dangling"); out != "" {
		t.Fatalf("fsck after gc: %s", out)
	}
	if got := git(t, w, "rev-parse", "v1"); got != next {
		t.Fatalf("tag v1 at %s, want %s", got, next)
	}
	packs, _ := filepath.Glob(filepath.Join(w.GitDir(), "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		t.Fatalf("%d packs after gc", len(packs))
	}
}

// Git commands run niced: snapshots give way to agents on a busy machine.
func TestGitRunsNiced(t *testing.T) {
	base, root, homes := initializedWithGit(t)
	own, err := exec.Command("nice").Output()
	if err != nil {
		t.Fatal(err)
	}
	var mine int
	fmt.Sscan(string(own), &mine)
	// A git that records its niceness at commit, once it is no longer
	// this test's (it is lowered just after the start), or after five
	// seconds.
	out := filepath.Join(base, "nice")
	spy := filepath.Join(base, "spy-git")
	script := fmt.Sprintf("#!/bin/sh\ncase \" $* \" in *\" commit \"*)\n"+
		"  n=$(nice); i=0\n"+
		"  while [ \"$n\" = %d ] && [ $i -lt 500 ]; do sleep 0.01; n=$(nice); i=$((i+1)); done\n"+
		"  echo \"$n\" > %s;;\nesac\nexec git \"$@\"\n", mine, out)
	if err := os.WriteFile(spy, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	m2, err := workspace.New(root, workspace.Options{HomesRoot: homes, GitPath: spy})
	if err != nil {
		t.Fatal(err)
	}
	w := acquire(t, m2, "ws")
	write(t, w, "a.txt", "a")
	if _, err := w.Snapshot(ctx(t), "s"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var theirs int
	fmt.Sscan(string(got), &theirs)
	if want := min(mine+10, 19); theirs != want {
		t.Fatalf("git ran at niceness %d, want %d", theirs, want)
	}
}
