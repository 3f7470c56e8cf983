package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultPath is the agent's PATH when Policy.Env has none.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// DefaultUID and DefaultGID are who the agent is inside its user
// namespace (they map to the runner's own ids outside, so its files belong
// to the runner). Not root: a process that is root there cannot create the
// nested user namespace BashCommand needs without CAP_SETFCAP.
const (
	DefaultUID = 1000
	DefaultGID = 1000
)

// Policy is what one agent process may see and do.
type Policy struct {
	// Workspace is bound read-write at the same path and is the working
	// directory unless Dir names another.
	Workspace string
	// Dir is the working directory, inside Workspace; empty means
	// Workspace.
	Dir string
	// Home is the agent's private home, bound read-write at the same path;
	// it becomes $HOME.
	Home string
	// Hide are directories made invisible (an empty tmpfs over each), even
	// where a ReadOnly path would show them: the workspaces root, the
	// runner's data. They must exist.
	Hide []string
	// ReadOnly are directories or files the agent may read, bound
	// read-only at the same path: the agent CLI's installation, and what
	// the operator adds (a shared toolchain, a package cache). Nothing of
	// the host is visible but these, the system view (see Wrap), the
	// workspace and the home.
	ReadOnly []string
	// Env is the ONLY environment the agent gets, plus HOME (Home), TMPDIR
	// (/tmp), PATH (DefaultPath unless Env sets it) and PWD (Workspace,
	// set by bwrap's --chdir).
	Env map[string]string
	// Network lets the agent process use the host's network (the CLI needs
	// the model API). Without it the sandbox has only its own loopback.
	Network bool
	// ToolNetwork lets the agent's Bash commands use the network too; see
	// BashCommand.
	ToolNetwork bool
	// NestedSandboxes lets the agent build sandboxes inside its own, as
	// BashCommand's commands do: it keeps the system calls that takes
	// (creating namespaces, mounting in them), which FilterStrict
	// refuses, and the commands it runs through BashCommand get
	// FilterStrict. Without it the agent itself runs under FilterStrict.
	NestedSandboxes bool
	// ToolShell puts, read-only, a shell at ToolShellPath that runs bash
	// in the nested sandbox BashCommand builds (no network, FilterStrict):
	// for an agent that runs its commands itself, through a shell it can be
	// told to use (OpenCode). It needs NestedSandboxes, and contradicts
	// ToolNetwork.
	ToolShell bool
	// UID and GID inside the sandbox; zero means DefaultUID, DefaultGID.
	UID, GID int
	// BwrapPath is the bwrap executable; empty means "bwrap" on PATH.
	BwrapPath string
}

func (p *Policy) bwrap() (string, error) {
	path := p.BwrapPath
	if path == "" {
		path = "bwrap"
	}
	abs, err := exec.LookPath(path)
	if err != nil {
		return "", &UnavailableError{Path: path, Probe: "look up bwrap", Err: err}
	}
	return filepath.Abs(abs)
}

func (p *Policy) ids() (uid, gid int) {
	uid, gid = p.UID, p.GID
	if uid == 0 {
		uid = DefaultUID
	}
	if gid == 0 {
		gid = DefaultGID
	}
	return uid, gid
}

// cleanDir checks that a policy directory is absolute, not "/", and an
// existing directory, and returns it with symlinks resolved (bwrap mounts
// the real path, so every later prefix check must see it too).
func cleanDir(field, dir string) (string, error) {
	real, err := cleanPath(field, dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", &PolicyError{Field: field, Reason: fmt.Sprintf("%q %v", dir, err)}
	}
	if !fi.IsDir() {
		return "", &PolicyError{Field: field, Reason: fmt.Sprintf("%q is not a directory", dir)}
	}
	return real, nil
}

// cleanPath checks that a policy path is absolute, not "/", and exists,
// and returns it with symlinks resolved.
func cleanPath(field, path string) (string, error) {
	bad := func(reason string) error {
		return &PolicyError{Field: field, Reason: fmt.Sprintf("%q %s", path, reason)}
	}
	switch {
	case path == "":
		return "", bad("is empty")
	case !filepath.IsAbs(path):
		return "", bad("is not absolute")
	case strings.ContainsAny(path, "\x00"):
		return "", bad("contains NUL")
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", bad(err.Error())
	}
	if real == "/" {
		return "", bad("is the root directory")
	}
	return real, nil
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// environ builds the agent's whole environment, sorted. Loader variables
// (LD_*) are returned apart: bwrap itself runs with the environment it is
// given, outside the sandbox and with privileges, so they must reach only
// the agent (through --setenv).
func (p *Policy) environ(home string) (env, loader []string, err error) {
	vars := make(map[string]string, len(p.Env)+3)
	for k, v := range p.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, nil, &PolicyError{Field: "Env", Reason: fmt.Sprintf("variable %q cannot be set", k)}
		}
		vars[k] = v
	}
	if vars["PATH"] == "" {
		vars["PATH"] = DefaultPath
	}
	vars["HOME"] = home
	vars["TMPDIR"] = "/tmp"
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	env = make([]string, 0, len(keys))
	for _, k := range keys {
		if strings.HasPrefix(k, "LD_") {
			loader = append(loader, k, vars[k])
			continue
		}
		env = append(env, k+"="+vars[k])
	}
	return env, loader, nil
}
