package sandbox

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// mount is one filesystem operation after the read-only root.
type mount struct {
	kind string // "--tmpfs", "--ro-bind" or "--bind"
	path string
}

func (m mount) visible() bool { return m.kind != "--tmpfs" }

func depth(path string) int { return strings.Count(path, "/") }

// Wrap returns the command that runs path with args under the policy.
// Its Env is never nil: bwrap hands its own environment to the agent
// unchanged, which keeps secrets (API keys) out of its argv, where any
// local user could read them in /proc. The caller passes Files to the
// child and closes them (Command.Close).
//
// The agent sees a minimal view of the machine, built on an empty root:
//
//	bwrap --die-with-parent --new-session
//	      --unshare-user --uid U --gid G --unshare-pid --unshare-ipc --unshare-uts [--unshare-net]
//	      --cap-drop ALL
//	      <system view: /usr and the /bin, /lib… beside it, read-only; /dev, /proc, /tmp of its own;
//	       /etc with only the entries of etcEntries, and a passwd and group of its own>
//	      <Hide: --tmpfs, ReadOnly: --ro-bind, Workspace and Home: --bind, shallowest first>
//	      <each Hide: --remount-ro>
//	      [--ro-bind-data FD /run/tether/tools.seccomp]   (NestedSandboxes)
//	      [--ro-bind-data FD /run/tether/bin/bash]        (ToolShell)
//	      --seccomp FD --remount-ro /
//	      --chdir Dir [--setenv LD_… …] -- path args…
func (p Policy) Wrap(path string, args []string) (*Command, error) {
	if err := p.checkToolShell(); err != nil {
		return nil, err
	}
	bwrap, err := p.bwrap()
	if err != nil {
		return nil, err
	}
	ws, err := cleanDir("Workspace", p.Workspace)
	if err != nil {
		return nil, err
	}
	home, err := cleanDir("Home", p.Home)
	if err != nil {
		return nil, err
	}
	dir, err := workDir(ws, p.Dir)
	if err != nil {
		return nil, err
	}
	mounts, err := p.mounts(ws, home)
	if err != nil {
		return nil, err
	}
	if err := checkVisible(path, mounts); err != nil {
		return nil, err
	}
	env, loader, err := p.environ(home)
	if err != nil {
		return nil, err
	}
	a, data, err := p.view(bwrap, home, mounts)
	if err != nil {
		return nil, err
	}
	a = append(a, "--chdir", dir)
	for i := 0; i < len(loader); i += 2 {
		a = append(a, "--setenv", loader[i], loader[i+1])
	}
	a = append(a, "--", path)
	a = append(a, args...)
	files, err := dataFiles(data)
	if err != nil {
		return nil, err
	}
	return &Command{Path: bwrap, Args: a, Env: env, Files: files}, nil
}

// mounts are the policy's own mounts, in the order bwrap must make them.
func (p Policy) mounts(ws, home string) ([]mount, error) {
	var mounts []mount
	for _, dir := range p.Hide {
		d, err := cleanDir("Hide", dir)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, mount{"--tmpfs", d})
	}
	for _, path := range p.ReadOnly {
		d, err := cleanPath("ReadOnly", path)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, mount{"--ro-bind", d})
	}
	if ws != "" {
		mounts = append(mounts, mount{"--bind", ws}, mount{"--bind", home})
	}
	// A mount covers everything deeper that came before it, so shallow
	// ones go first; at equal depth the order above holds (hide, then
	// read-only, then read-write), so binding a directory back wins.
	sort.SliceStable(mounts, func(i, j int) bool { return depth(mounts[i].path) < depth(mounts[j].path) })
	return mounts, nil
}

// view is bwrap's command line up to --chdir: namespaces, the system
// view, mounts, the seccomp filters, the tool shell, and a read-only root;
// data is what the descriptors it names (3, 4, …) must hold.
func (p Policy) view(bwrap, home string, mounts []mount) (a []string, data [][]byte, err error) {
	uid, gid := p.ids()
	a = []string{
		"--die-with-parent",
		"--new-session",
		"--unshare-user", "--uid", strconv.Itoa(uid), "--gid", strconv.Itoa(gid),
		"--unshare-pid", "--unshare-ipc", "--unshare-uts",
	}
	if !p.Network {
		a = append(a, "--unshare-net")
	}
	a = append(a, "--cap-drop", "ALL")
	sys, data := systemView(uid, gid, home, firstFD)
	a = append(a, sys...)
	for _, m := range mounts {
		if m.kind == "--tmpfs" {
			a = append(a, m.kind, m.path)
		} else {
			a = append(a, m.kind, m.path, m.path)
		}
	}
	// Hidden directories are empty and read-only: nothing written there
	// could reach the host anyway, but a write that fails says so.
	for _, m := range mounts {
		if !m.visible() && !boundAt(m.path, mounts) {
			a = append(a, "--remount-ro", m.path)
		}
	}
	filter := FilterStrict
	if p.NestedSandboxes {
		filter = FilterAgent
		tools, err := seccompProgram(FilterStrict)
		if err != nil {
			return nil, nil, err
		}
		a = append(a, "--perms", "0444", "--ro-bind-data", strconv.Itoa(firstFD+len(data)), toolFilterPath)
		data = append(data, tools)
	}
	if p.ToolShell {
		a = append(a, "--perms", "0555", "--ro-bind-data", strconv.Itoa(firstFD+len(data)), ToolShellPath)
		data = append(data, toolShell(bwrap))
	}
	prog, err := seccompProgram(filter)
	if err != nil {
		return nil, nil, err
	}
	a = append(a, "--seccomp", strconv.Itoa(firstFD+len(data)), "--remount-ro", "/")
	data = append(data, prog)
	return a, data, nil
}

// firstFD is the first descriptor a child gets beyond stdin, stdout and
// stderr.
const firstFD = 3

// boundAt reports whether a directory is bound back at exactly path, in
// which case remounting path read-only would hit that bind.
func boundAt(path string, mounts []mount) bool {
	for _, m := range mounts {
		if m.visible() && m.path == path {
			return true
		}
	}
	return false
}

// checkVisible refuses an executable the sandbox would not show: the
// deepest mount that holds it (and its symlink target) must be visible,
// or, with none, the system view must show it.
func checkVisible(path string, mounts []mount) error {
	if !strings.Contains(path, "/") {
		return nil // looked up on the sandbox's PATH
	}
	if !filepath.IsAbs(path) {
		return &PolicyError{Field: "path", Reason: fmt.Sprintf("%q must be absolute or a bare name", path)}
	}
	candidates := []string{filepath.Clean(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != candidates[0] {
		candidates = append(candidates, real)
	}
	for _, c := range candidates {
		var holder *mount
		for i := range mounts {
			if within(c, mounts[i].path) {
				holder = &mounts[i]
			}
		}
		switch {
		case holder != nil && !holder.visible():
			return &PolicyError{Field: "path", Reason: fmt.Sprintf("%q is hidden inside the sandbox (under %s)", c, holder.path)}
		case holder == nil && !visibleInSystem(c):
			return &PolicyError{Field: "path", Reason: fmt.Sprintf("%q is not visible inside the sandbox; add it to ReadOnly", c)}
		}
	}
	return nil
}

// workDir checks that dir (default: the workspace ws) is a directory
// inside ws, symlinks resolved.
func workDir(ws, dir string) (string, error) {
	if dir == "" {
		return ws, nil
	}
	d, err := cleanDir("Dir", dir)
	if err != nil {
		return "", err
	}
	if !within(d, ws) {
		return "", &PolicyError{Field: "Dir", Reason: fmt.Sprintf("%q is outside the workspace", dir)}
	}
	return d, nil
}
