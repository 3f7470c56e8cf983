package sandbox

import "fmt"

// ToolShellPath is where a policy with ToolShell puts its shell inside the
// sandbox. It is named bash so that an agent that picks its command line
// by the shell's name (OpenCode: `bash -c command`, or `bash -l -c script`
// for a terminal) treats it as the bash it runs.
const ToolShellPath = InternalDir + "/bin/bash"

// toolShell is the script at ToolShellPath: bash, given the shell's own
// arguments unchanged, in the nested sandbox BashCommand builds. The
// command's working directory, descriptors, terminal and process group
// are its caller's, so output, exit status, a pty and a kill of the group
// behave as with bash itself. SHELL names that bash inside: the agent's
// SHELL may be this script, and a command that started $SHELL would try to
// nest a sandbox its filter refuses.
//
// It fails closed: exec replaces the script with bwrap or the script ends
// in error (no bwrap, no filter file), and bwrap runs the command only once
// the network namespace exists.
func toolShell(bwrap string) []byte {
	bash := bashPath()
	line := nestedLine(bwrap, true, map[string]string{"SHELL": bash}, `"$@"`)
	return fmt.Appendf(nil, "#!/bin/sh\n# bash without network, in a sandbox nested in the agent's own\nexec %s\n", line)
}

// checkToolShell refuses a ToolShell the policy cannot honour: its
// nested sandbox needs the system calls NestedSandboxes keeps, and with
// ToolNetwork the agent's commands are meant to have network.
func (p *Policy) checkToolShell() error {
	switch {
	case !p.ToolShell:
		return nil
	case !p.NestedSandboxes:
		return &PolicyError{Field: "ToolShell", Reason: "needs NestedSandboxes (its commands run in a nested sandbox)"}
	case p.ToolNetwork:
		return &PolicyError{Field: "ToolShell", Reason: "takes the network from commands that ToolNetwork gives it"}
	}
	return nil
}
