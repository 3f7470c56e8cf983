package sandbox

import (
	"context"
	"os/exec"
	"strconv"
	"time"
)

// probeTimeout bounds each bwrap run of Available.
const probeTimeout = 10 * time.Second

// Available checks that bwrap is installed and can build the sandbox here:
// first the simplest one (bwrap --ro-bind / / true), then one with every
// namespace Wrap asks for and, inside it, the nested network-less sandbox
// BashCommand uses. The error is an *UnavailableError.
func Available() error {
	return Policy{}.Available()
}

// Available is the package-level Available for this policy's BwrapPath,
// UID and GID.
func (p Policy) Available() error {
	bwrap, err := p.bwrap()
	if err != nil {
		return err
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		return &UnavailableError{Path: bwrap, Probe: "look up true", Err: err}
	}
	if err := probe(bwrap, "bwrap --ro-bind / / true", "--ro-bind", "/", "/", truePath); err != nil {
		return err
	}
	uid, gid := p.ids()
	args := []string{
		"--die-with-parent", "--new-session",
		"--unshare-user", "--uid", strconv.Itoa(uid), "--gid", strconv.Itoa(gid),
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--",
	}
	args = append(args, nestedArgs(bwrap)...)
	args = append(args, truePath)
	return probe(bwrap, "the full sandbox with a nested one inside", args...)
}

func probe(bwrap, what string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap, args...)
	cmd.Env = []string{"PATH=" + DefaultPath}
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &UnavailableError{Path: bwrap, Probe: what, Output: trimOutput(out), Err: err}
	}
	return nil
}
