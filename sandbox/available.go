package sandbox

import (
	"context"
	"os/exec"
	"time"
)

// probeTimeout bounds each bwrap run of Available.
const probeTimeout = 10 * time.Second

// Available checks that bwrap is installed and can build the sandbox here:
// first the simplest one (bwrap --ro-bind / / true), then the agent's
// view with its seccomp filter and, inside it, the nested network-less
// sandbox, through BashCommand and through the tool shell (ToolShell).
// The error is an *UnavailableError; bwrap's own words in it name the
// mount that failed.
func Available() error {
	return Policy{}.Available()
}

// Available is the package-level Available for this policy's BwrapPath,
// UID and GID, Hide and ReadOnly: each of those paths is checked, and
// mounted in the probe.
func (p Policy) Available() error {
	bwrap, err := p.bwrap()
	if err != nil {
		return err
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		return &UnavailableError{Path: bwrap, Probe: "look up true", Err: err}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return &UnavailableError{Path: bwrap, Probe: "look up bash", Err: err}
	}
	if err := probe(bwrap, "bwrap --ro-bind / / true", nil, "--ro-bind", "/", "/", truePath); err != nil {
		return err
	}
	p.Network, p.ToolNetwork, p.NestedSandboxes, p.ToolShell = true, false, true, true
	mounts, err := p.mounts("", "")
	if err != nil {
		return err
	}
	args, data, err := p.view(bwrap, "/nonexistent", mounts)
	if err != nil {
		return err
	}
	nested := BashCommand(p, truePath) + " && " + ToolShellPath + " -c " + truePath
	args = append(args, "--", bash, "-c", nested)
	return probe(bwrap, "the agent's view with nested sandboxes inside", data, args...)
}

func probe(bwrap, what string, data [][]byte, args ...string) error {
	files, err := dataFiles(data)
	if err != nil {
		return err
	}
	defer (&Command{Files: files}).Close()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap, args...)
	cmd.ExtraFiles = files
	cmd.Env = []string{"PATH=" + DefaultPath}
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &UnavailableError{Path: bwrap, Probe: what, Output: trimOutput(out), Err: err}
	}
	return nil
}
