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
	return nestedLine(bwrap, p.NestedSandboxes, nil, "-c", shellQuote(command))
}

// nestedLine is the shell line that runs bash with args (shell words, as
// they must stand on the line) in the nested sandbox: nestedArgs, the
// variables of toolEnv, taken from the environment of the shell that runs
// the line unless env sets them, and with filter FilterStrict, read from
// the file Wrap puts in the agent's sandbox. The agent's API key and the
// like stay out of the tool's reach.
func nestedLine(bwrap string, filter bool, env map[string]string, args ...string) string {
	var b strings.Builder
	for _, w := range nestedArgs(bwrap) {
		b.WriteString(shellQuote(w))
		b.WriteByte(' ')
	}
	for _, name := range toolEnv {
		value := `"$` + name + `"`
		if v, ok := env[name]; ok {
			value = shellQuote(v)
		}
		b.WriteString(`--setenv ` + name + ` ` + value + ` `)
	}
	if filter {
		b.WriteString("--seccomp " + strconv.Itoa(toolFilterFD) + " ")
	}
	b.WriteString("-- " + shellQuote(bashPath()))
	for _, a := range args {
		b.WriteString(" " + a)
	}
	if filter {
		b.WriteString(" " + strconv.Itoa(toolFilterFD) + "<" + toolFilterPath)
	}
	return b.String()
}

// bashPath is the bash a nested sandbox runs: the one on the runner's
// PATH, which the sandbox's system view shows.
func bashPath() string {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return "/bin/bash"
	}
	return bash
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
