package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// PrivateDir is the directory inside a workspace kept for the runner's own
// files: snapshots leave it out.
const PrivateDir = ".tether"

// Defaults for Options.
const (
	DefaultGitTimeout = 2 * time.Minute
	DefaultGitName    = "Tether"
	DefaultGitEmail   = "tether@localhost"
)

// Options configure a Manager.
type Options struct {
	// HomesRoot holds the workspaces' private homes (required). It must
	// not be inside the workspaces root nor contain it.
	HomesRoot string
	// GitPath is the git executable; empty means "git" on PATH.
	GitPath string
	// GitTimeout bounds each git command (default DefaultGitTimeout).
	GitTimeout time.Duration
	// GitName and GitEmail author the snapshots (defaults DefaultGitName,
	// DefaultGitEmail).
	GitName, GitEmail string
	// Exclude are extra gitignore patterns snapshots leave out, besides
	// PrivateDir.
	Exclude []string
}

// Manager owns the workspaces under one root. Safe for concurrent use; it
// holds no state beyond its configuration (holders are tracked with file
// locks, so two runners on one root also exclude each other).
type Manager struct {
	root  string
	homes string
	opts  Options
	git   git
}

// New prepares root and opts.HomesRoot (created 0700 when missing) and
// finds git.
func New(root string, opts Options) (*Manager, error) {
	if root == "" || opts.HomesRoot == "" {
		return nil, errors.New("workspace: root and Options.HomesRoot are required")
	}
	root, err := prepareDir(root)
	if err != nil {
		return nil, err
	}
	homes, err := prepareDir(opts.HomesRoot)
	if err != nil {
		return nil, err
	}
	if within(homes, root) || within(root, homes) {
		return nil, fmt.Errorf("workspace: homes root %s and workspaces root %s must not contain each other", homes, root)
	}
	private := filepath.Join(root, PrivateDir)
	for _, dir := range []string{private, filepath.Join(private, "git"), filepath.Join(private, "locks")} {
		if err := mkdirPrivate(dir); err != nil {
			return nil, err
		}
	}
	gitPath := opts.GitPath
	if gitPath == "" {
		gitPath = "git"
	}
	if gitPath, err = exec.LookPath(gitPath); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if opts.GitTimeout <= 0 {
		opts.GitTimeout = DefaultGitTimeout
	}
	if opts.GitName == "" {
		opts.GitName = DefaultGitName
	}
	if opts.GitEmail == "" {
		opts.GitEmail = DefaultGitEmail
	}
	opts.HomesRoot = homes
	return &Manager{root: root, homes: homes, opts: opts,
		git: git{path: gitPath, home: private, timeout: opts.GitTimeout}}, nil
}

// prepareDir makes dir absolute, creates it 0700 if missing, and resolves
// symlinks so containment checks compare real paths.
func prepareDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	return real, nil
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// mkdirPrivate creates dir 0700 unless it exists, and insists that it is a
// real directory (not a symlink planted to redirect the runner).
func mkdirPrivate(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("workspace: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("workspace: %s is not a directory", dir)
	}
	return nil
}

// Root is the workspaces root (absolute, symlinks resolved).
func (m *Manager) Root() string { return m.root }

// HomesRoot is the root of the private homes.
func (m *Manager) HomesRoot() string { return m.homes }

// Path is where workspace id lives, whether or not it exists yet.
func (m *Manager) Path(id string) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	return filepath.Join(m.root, id), nil
}

// Home returns workspace id's private home, creating it (0700) on first
// use. It outlives sessions, like the workspace. It does not take the
// workspace: the caller is expected to hold it.
func (m *Manager) Home(id string) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	dir := filepath.Join(m.homes, id)
	if err := mkdirPrivate(dir); err != nil {
		return "", err
	}
	return dir, nil
}

func (m *Manager) gitDir(id string) string {
	return filepath.Join(m.root, PrivateDir, "git", id+".git")
}

// Acquire takes workspace id for the caller, creating its directory and
// repository on first use. Until Release, every other Acquire of id (from
// this process or another) fails with a *BusyError.
func (m *Manager) Acquire(ctx context.Context, id string) (*Workspace, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lock, busy, err := lockFile(filepath.Join(m.root, PrivateDir, "locks", id))
	if err != nil {
		return nil, fmt.Errorf("workspace: lock %q: %w", id, err)
	}
	if busy {
		return nil, &BusyError{ID: id}
	}
	w := &Workspace{m: m, id: id, path: filepath.Join(m.root, id), gitDir: m.gitDir(id), lock: lock}
	if err := m.prepare(ctx, w); err != nil {
		w.Release()
		return nil, err
	}
	return w, nil
}

// prepare creates the workspace and its repository if missing. It runs
// under the workspace's lock, so only one caller ever initializes.
func (m *Manager) prepare(ctx context.Context, w *Workspace) error {
	if err := mkdirPrivate(w.path); err != nil {
		return err
	}
	if _, err := os.Lstat(w.gitDir); errors.Is(err, fs.ErrNotExist) {
		if err := m.initRepo(ctx, w.gitDir); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return m.writeExclude(w.gitDir)
}

// initRepo creates the repository in a scratch directory and renames it
// into place, so a repository that exists is always complete.
func (m *Manager) initRepo(ctx context.Context, gitDir string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(gitDir), ".init-*")
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer os.RemoveAll(tmp)
	steps := [][]string{
		// No template: no sample hooks, nothing we did not write.
		{"-c", "init.defaultBranch=main", "--git-dir=" + tmp, "init", "-q", "--template="},
		{"--git-dir=" + tmp, "config", "core.bare", "false"},
		{"--git-dir=" + tmp, "config", "user.name", m.opts.GitName},
		{"--git-dir=" + tmp, "config", "user.email", m.opts.GitEmail},
		{"--git-dir=" + tmp, "config", "commit.gpgSign", "false"},
	}
	for _, args := range steps {
		if _, err := m.git.run(ctx, args...); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, gitDir); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// writeExclude keeps info/exclude equal to PrivateDir plus Options.Exclude.
func (m *Manager) writeExclude(gitDir string) error {
	var b strings.Builder
	b.WriteString("# written by tether: runner-private files\n/" + PrivateDir + "/\n")
	for _, p := range m.opts.Exclude {
		b.WriteString(p + "\n")
	}
	dir := filepath.Join(gitDir, "info")
	path := filepath.Join(dir, "exclude")
	if old, err := os.ReadFile(path); err == nil && string(old) == b.String() {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}
