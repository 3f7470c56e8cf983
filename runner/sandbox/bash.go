package sandbox

import (
	"os/exec"
	"strconv"
	"strings"
)

// BashCommand rewrites a command of the agent's Bash tool so that it runs
// without network, in a nested bwrap with a network namespace of its own
// (only an empty loopback), while seeing the same files, workspace
// included, as the agent. The agent process keeps the network it needs for
// the model API; its tools do not.
//
// The command is returned unchanged when p.ToolNetwork allows tools the
// network, and when p.Network is false (the whole sandbox has none then).
// The command travels as one single-quoted word, so any string, with
// quotes, $, backticks or newlines, reaches bash -c exactly as written. If
// the nested sandbox cannot be made the command fails rather than running
// with network. With p.NestedSandboxes the command also runs under
// FilterStrict (Wrap must have had it too, for the filter's file).
func BashCommand(p Policy, command string) string {
	if p.ToolNetwork || !p.Network {
		return command
	}
	bwrap, err := p.bwrap()
	if err != nil {
		bwrap = "bwrap" // fails closed inside: the command does not run
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		bash = "/bin/bash"
	}
	var b strings.Builder
	for _, w := range nestedArgs(bwrap) {
		b.WriteString(shellQuote(w))
		b.WriteByte(' ')
	}
	// The command gets only harmless variables, expanded from the agent's
	// environment by the shell that runs this line: the agent's API key
	// and the like stay out of the tool's reach.
	for _, name := range toolEnv {
		b.WriteString(`--setenv ` + name + ` "$` + name + `" `)
	}
	if p.NestedSandboxes {
		// FilterStrict, from the file Wrap put in the agent's sandbox.
		b.WriteString("--seccomp " + strconv.Itoa(toolFilterFD) + " ")
	}
	for _, w := range []string{"--", bash, "-c", command} {
		b.WriteString(shellQuote(w))
		b.WriteByte(' ')
	}
	if p.NestedSandboxes {
		b.WriteString(strconv.Itoa(toolFilterFD) + "<" + toolFilterPath)
	}
	return strings.TrimSuffix(b.String(), " ")
}

// toolFilterFD is the descriptor a nested sandbox reads its seccomp
// filter from.
const toolFilterFD = 9

// WrappedMarker is a run of words every command BashCommand wraps holds
// (and JSON keeps as it is), so a caller can pass over, cheaply, text
// that holds no wrapped command.
const WrappedMarker = "--unshare-user --unshare-net --die-with-parent"

// toolEnv are the variables a tool command keeps.
var toolEnv = [...]string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "USER", "SHELL"}

// nestedArgs is the nested sandbox, up to its environment: a new user
// namespace (the agent has no capabilities to make the network namespace
// otherwise) and network namespace, everything else seen as it is outside
// (--dev-bind keeps /dev usable), dying with its parent. A pid namespace
// with its own /proc would be better still, but a fresh procfs cannot be
// mounted under a masked /proc (as in containers); secrets are kept out of
// the agent's environment instead (see the driver's API proxy).
func nestedArgs(bwrap string) []string {
	args := []string{bwrap}
	args = append(args, strings.Fields(WrappedMarker)...)
	return append(args, "--dev-bind", "/", "/", "--clearenv")
}

// shellQuote makes s one POSIX shell word: inside single quotes nothing is
// special, and each single quote in s becomes quote, backslash, quote, quote.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
