package workspace

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Workspace is one held workspace. Its methods are safe for concurrent use;
// Snapshots run one at a time.
type Workspace struct {
	m      *Manager
	id     string
	path   string
	gitDir string

	mu       sync.Mutex
	lock     *os.File // nil once released
	released bool
	prepared bool // the repository exists and is set up
}

// ID is the workspace id.
func (w *Workspace) ID() string { return w.id }

// Path is the workspace directory (absolute).
func (w *Workspace) Path() string { return w.path }

// GitDir is the workspace's repository, outside the work tree.
func (w *Workspace) GitDir() string { return w.gitDir }

// Prepare creates the workspace's repository if it is missing (Acquire
// does it; after Claim, Prepare, Snapshot and Git do it on first use).
// It is cheap once done.
func (w *Workspace) Prepare(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released {
		return ErrReleased
	}
	return w.prepareLocked(ctx)
}

func (w *Workspace) prepareLocked(ctx context.Context) error {
	if w.prepared {
		return nil
	}
	if err := w.m.prepareRepo(ctx, w); err != nil {
		return err
	}
	w.prepared = true
	return nil
}

// Snapshot commits the whole work tree as it is (git add -A, then a commit
// even when nothing changed) and returns the commit hash. ctx and the
// Manager's git timeout bound each git command.
func (w *Workspace) Snapshot(ctx context.Context, message string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released {
		return "", ErrReleased
	}
	if err := w.prepareLocked(ctx); err != nil {
		return "", err
	}
	w.removeStaleLocks()
	if err := ctx.Err(); err != nil {
		return "", &GitError{Args: []string{"commit"}, Err: err} // as git's commit would fail
	}
	if ref, ok := w.rootCommitRef(message); ok {
		return w.writeRootCommit(ref, message, time.Now())
	}
	if !w.nothingToAdd() {
		if _, err := w.gitLocked(ctx, "add", "-A"); err != nil {
			return "", err
		}
	}
	if _, err := w.gitLocked(ctx, "commit", "--allow-empty", "--allow-empty-message", "--no-verify", "-q", "-m", message); err != nil {
		return "", err
	}
	if hash, ok := w.readBranch(); ok {
		return hash, nil
	}
	out, err := w.gitLocked(ctx, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// nothingToAdd reports whether `git add -A` would find nothing: no index
// yet (no file was ever added) and an empty work tree, as in a new
// workspace. Its first snapshot then costs one git command, not two.
func (w *Workspace) nothingToAdd() bool {
	if _, err := os.Lstat(filepath.Join(w.gitDir, "index")); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	d, err := os.Open(w.path)
	if err != nil {
		return false
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}

// headBranch is the branch HEAD names ("refs/heads/…").
func (w *Workspace) headBranch() (ref string, ok bool) {
	head, err := os.ReadFile(filepath.Join(w.gitDir, "HEAD"))
	if err != nil {
		return "", false
	}
	ref, isRef := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !isRef || !strings.HasPrefix(ref, "refs/heads/") || strings.Contains(ref, "..") {
		return "", false
	}
	return ref, true
}

// readBranch reads the commit of the branch HEAD names from its loose ref,
// which the commit just written leaves: cheaper than a git command. ok is
// false when the ref is not there as expected (git then answers).
func (w *Workspace) readBranch() (hash string, ok bool) {
	ref, ok := w.headBranch()
	if !ok {
		return "", false
	}
	b, err := os.ReadFile(filepath.Join(w.gitDir, filepath.FromSlash(ref)))
	if err != nil {
		return "", false
	}
	hash = strings.TrimSpace(string(b))
	if len(hash) != 40 || strings.Trim(hash, "0123456789abcdef") != "" {
		return "", false
	}
	return hash, true
}

// Git runs another git command on the workspace (log, diff, show, …) with
// the same environment and bounds as Snapshot, and returns its stdout.
func (w *Workspace) Git(ctx context.Context, args ...string) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released {
		return nil, ErrReleased
	}
	if err := w.prepareLocked(ctx); err != nil {
		return nil, err
	}
	return w.gitLocked(ctx, args...)
}

func (w *Workspace) gitLocked(ctx context.Context, args ...string) ([]byte, error) {
	full := append([]string{"--git-dir=" + w.gitDir, "--work-tree=" + w.path}, args...)
	return w.m.git.run(ctx, full...)
}

// removeStaleLocks deletes lock files a git command killed by its timeout
// left behind. Only the holder runs git on this repository, and never two
// commands at once, so no live git owns them.
func (w *Workspace) removeStaleLocks() {
	stale := []string{filepath.Join(w.gitDir, "index.lock"), filepath.Join(w.gitDir, "HEAD.lock")}
	refLocks, _ := filepath.Glob(filepath.Join(w.gitDir, "refs", "heads", "*.lock"))
	for _, p := range append(stale, refLocks...) {
		_ = os.Remove(p) // a missing lock is the usual case
	}
}

// Release gives the workspace back. It waits for a Snapshot in progress;
// calling it again does nothing.
func (w *Workspace) Release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released {
		return
	}
	w.released = true
	if w.lock != nil {
		_ = w.lock.Close() // drops the flock
		w.lock = nil
	}
}
