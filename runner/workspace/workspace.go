package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
}

// ID is the workspace id.
func (w *Workspace) ID() string { return w.id }

// Path is the workspace directory (absolute).
func (w *Workspace) Path() string { return w.path }

// GitDir is the workspace's repository, outside the work tree.
func (w *Workspace) GitDir() string { return w.gitDir }

// Snapshot commits the whole work tree as it is (git add -A, then a commit
// even when nothing changed) and returns the commit hash. ctx and the
// Manager's git timeout bound each git command.
func (w *Workspace) Snapshot(ctx context.Context, message string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released {
		return "", ErrReleased
	}
	w.removeStaleLocks()
	if _, err := w.gitLocked(ctx, "add", "-A"); err != nil {
		return "", err
	}
	if _, err := w.gitLocked(ctx, "commit", "--allow-empty", "--allow-empty-message", "--no-verify", "-q", "-m", message); err != nil {
		return "", err
	}
	out, err := w.gitLocked(ctx, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Git runs another git command on the workspace (log, diff, show, …) with
// the same environment and bounds as Snapshot, and returns its stdout.
func (w *Workspace) Git(ctx context.Context, args ...string) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released {
		return nil, ErrReleased
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
