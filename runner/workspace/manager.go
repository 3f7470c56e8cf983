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
	err := os.Mkdir(dir, 0o700)
	if err == nil {
		return nil // made just now: a directory
	}
	if !errors.Is(err, fs.ErrExist) {
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
	w, err := m.Claim(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := w.Prepare(ctx); err != nil {
		w.Release()
		return nil, err
	}
	return w, nil
}

// Claim is Acquire without the repository: it takes the workspace and
// creates its directory, and leaves the repository to Prepare (or the
// first Snapshot or Git), which may then run while the workspace's agent
// starts. The directory is all an agent needs to start in.
func (m *Manager) Claim(ctx context.Context, id string) (*Workspace, error) {
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
	if err := mkdirPrivate(w.path); err != nil {
		w.Release()
		return nil, err
	}
	return w, nil
}

// prepareRepo creates the workspace's repository if missing and keeps its
// exclude file current. It runs under the workspace's lock, so only one
// caller ever initializes.
func (m *Manager) prepareRepo(ctx context.Context, w *Workspace) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := os.Lstat(w.gitDir); errors.Is(err, fs.ErrNotExist) {
		if err := m.initRepo(w.gitDir); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return m.writeExclude(w.gitDir)
}

// initRepo creates the repository in a scratch directory and renames it
// into place, so a repository that exists is always complete. It writes
// what git needs of what `git init --template=` writes, plus the runner's
// config and exclude file, itself: five git processes per new workspace
// cost more than the agent's start. objects/info, objects/pack and
// refs/tags are left to git, which makes them when it needs them: every
// file or directory created costs a new session time (an inode, and
// journal work that a concurrent fsync waits for).
func (m *Manager) initRepo(gitDir string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(gitDir), ".init-*")
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, dir := range []string{"objects", "refs/heads", "info"} {
		if err := os.MkdirAll(filepath.Join(tmp, dir), 0o700); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	files := map[string]string{
		"HEAD":         "ref: refs/heads/main\n",
		"info/exclude": m.exclude(),
		// No reflogs: snapshots only ever add commits to main, and a
		// reflog costs five more files and directories per repository.
		"config": "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogAllRefUpdates = false\n" +
			"[user]\n\tname = " + configValue(m.opts.GitName) + "\n\temail = " + configValue(m.opts.GitEmail) + "\n" +
			"[commit]\n\tgpgSign = false\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(content), 0o600); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	if err := os.Rename(tmp, gitDir); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// configValue quotes a value for a git config file.
func configValue(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\b", `\b`)
	return `"` + r.Replace(v) + `"`
}

// exclude is what info/exclude holds: PrivateDir plus Options.Exclude.
func (m *Manager) exclude() string {
	var b strings.Builder
	b.WriteString("# written by tether: runner-private files\n/" + PrivateDir + "/\n")
	for _, p := range m.opts.Exclude {
		b.WriteString(p + "\n")
	}
	return b.String()
}

// writeExclude keeps info/exclude equal to exclude().
func (m *Manager) writeExclude(gitDir string) error {
	want := m.exclude()
	dir := filepath.Join(gitDir, "info")
	path := filepath.Join(dir, "exclude")
	if old, err := os.ReadFile(path); err == nil && string(old) == want {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := os.WriteFile(path, []byte(want), 0o600); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}
