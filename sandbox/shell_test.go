package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tetherhq/tether/sandbox"
)

// toolShellPolicy is the runner's policy for an agent that runs its
// commands through the tool shell (OpenCode): network for the agent,
// nested sandboxes for its commands.
func toolShellPolicy(f *fixture) sandbox.Policy {
	p := f.policy()
	p.Network, p.NestedSandboxes, p.ToolShell = true, true, true
	p.Env["AGENT_SECRET"] = "stand-in-key"
	return p
}

// toolShell is the tool shell's command line for script, as OpenCode
// starts it (its shell, -c, the model's command), written for bash -c.
func toolShell(script string) string {
	return sandbox.ToolShellPath + " -c " + shellWord(script)
}

func shellWord(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// The agent keeps its network; a command it runs through the tool shell
// has none, yet sees and writes the same files, in the same directory.
func TestToolShellHasNoNetwork(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	l := listen(t)
	p := toolShellPolicy(f)
	if err := os.Mkdir(filepath.Join(f.ws, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := connect(l) + "; echo from-tool > tool.txt && cat tool.txt; pwd; id -un; ls -A " + f.root
	r := bash(t, p, "cd sub && "+toolShell(cmd))
	if want := "refused\nfrom-tool\n" + f.ws + "/sub\nagent\na\n"; r.stdout != want || l.accepted.Load() != 0 {
		t.Fatalf("stdout %q, want %q; stderr %s; accepted %d", r.stdout, want, r.stderr, l.accepted.Load())
	}
	if !exists(filepath.Join(f.ws, "sub", "tool.txt")) {
		t.Fatal("the command's write did not reach the workspace on the host")
	}
	// Control: the agent itself, and the same command through bash, do
	// connect, so the refusal is the tool shell's doing.
	if r := bash(t, p, connect(l)); r.stdout != "connected: hello from the host\n" || l.accepted.Load() != 1 {
		t.Fatalf("control: stdout %q stderr %s accepted %d", r.stdout, r.stderr, l.accepted.Load())
	}
}

// The shell is bash to its caller: the arguments reach bash unchanged
// (OpenCode's `-c command`, and its terminal's `-l -c script opencode
// dir`), and its output, errors and exit status come back.
func TestToolShellIsBash(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	p := toolShellPolicy(f)
	for _, cmd := range []string{
		`echo 'single' "double" "it's" 'say "hi"'; printf '%s|' a\ b "c  d" 'e\nf' \\ \'`,
		"echo `echo backticks` $(echo dollar-paren) \"$HOME\" '$HOME'",
		"echo line1\necho 'multi\nline'\ncat <<'EOF'\nheredoc $HOME\nEOF",
		`echo out; echo err >&2; exit 7`,
		`echo "unicode: héllo ✓"; false; echo "exit $?"`,
	} {
		direct := bash(t, p, cmd)
		shelled := bash(t, p, toolShell(cmd))
		if direct.stdout != shelled.stdout || direct.stderr != shelled.stderr || direct.code != shelled.code || direct.stdout == "" {
			t.Errorf("command %q\nbash       %q %q (exit %d)\ntool shell %q %q (exit %d)", cmd,
				direct.stdout, direct.stderr, direct.code, shelled.stdout, shelled.stderr, shelled.code)
		}
	}
	login := sandbox.ToolShellPath + ` -l -c 'cd -- "$1"; pwd; echo "$0"' opencode ` + f.ws
	if r := bash(t, p, login); r.stdout != f.ws+"\nopencode\n" {
		t.Errorf("login form: stdout %q stderr %s", r.stdout, r.stderr)
	}
}

// A command gets only the harmless variables: not the agent's key or
// server password, and SHELL is bash (the agent's SHELL is the tool shell).
func TestToolShellEnvironment(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	p := toolShellPolicy(f)
	p.Env["SHELL"] = sandbox.ToolShellPath
	r := bash(t, p, toolShell(`cat /proc/self/environ`))
	got := strings.Split(strings.TrimSuffix(r.stdout, "\x00"), "\x00")
	env := map[string]string{}
	for _, kv := range got {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if _, leaked := env["AGENT_SECRET"]; leaked || env["HOME"] != f.home || env["PATH"] != sandbox.DefaultPath ||
		env["LANG"] != "C" || filepath.Base(env["SHELL"]) != "bash" || env["SHELL"] == sandbox.ToolShellPath {
		t.Fatalf("environment of a command: %q (stderr %s)", got, r.stderr)
	}
}

// Fail closed: where the nested sandbox cannot be built (here, inside a
// command, whose filter refuses new namespaces), the command does not run
// at all, and says why.
func TestToolShellFailsClosed(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	l := listen(t)
	p := toolShellPolicy(f)
	inner := toolShell("echo RAN > ran.txt; " + connect(l))
	r := bash(t, p, toolShell(inner+`; echo "inner exit $?"`))
	if strings.Contains(r.stdout, "connected") || l.accepted.Load() != 0 || exists(filepath.Join(f.ws, "ran.txt")) ||
		!strings.Contains(r.stdout, "inner exit 1") || !strings.Contains(r.stderr, "bwrap") {
		t.Fatalf("stdout %q stderr %q accepted %d", r.stdout, r.stderr, l.accepted.Load())
	}
}

// The policies a tool shell cannot honour are refused.
func TestToolShellPolicyErrors(t *testing.T) {
	f := newFixture(t)
	for name, tune := range map[string]func(*sandbox.Policy){
		"without NestedSandboxes": func(p *sandbox.Policy) { p.NestedSandboxes = false },
		"with ToolNetwork":        func(p *sandbox.Policy) { p.ToolNetwork = true },
	} {
		p := toolShellPolicy(f)
		tune(&p)
		sc, err := p.Wrap("/bin/true", nil)
		var pe *sandbox.PolicyError
		if !errors.Is(err, sandbox.ErrInvalidPolicy) || !errors.As(err, &pe) || pe.Field != "ToolShell" {
			if sc != nil {
				sc.Close()
			}
			t.Errorf("%s: %v", name, err)
		}
	}
	p := toolShellPolicy(f)
	sc, err := p.Wrap("/bin/true", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc.Close()
	if !strings.Contains(strings.Join(sc.Args, " "), "--perms 0555 --ro-bind-data 6 "+sandbox.ToolShellPath) || len(sc.Files) != 5 {
		t.Fatalf("%d files, argv %q", len(sc.Files), sc.Args)
	}
}

// The shell file is the sandbox's, read-only: a command cannot replace it
// with one that keeps the network.
func TestToolShellIsReadOnly(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	p := toolShellPolicy(f)
	attempt := "echo 'exec /bin/bash \"$@\"' > " + sandbox.ToolShellPath + " 2>/dev/null || echo denied; " +
		"rm -f " + sandbox.ToolShellPath + " 2>/dev/null || echo denied"
	for _, script := range []string{attempt, toolShell(attempt)} {
		if r := bash(t, p, script); r.stdout != "denied\ndenied\n" {
			t.Errorf("%s: stdout %q stderr %s", script, r.stdout, r.stderr)
		}
	}
}

// The agent ends a command by signalling its process group (OpenCode on
// an abort or a timeout): bwrap and everything the command started go.
func TestToolShellGroupKill(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	m := marker()
	// set -m puts the command in a process group of its own, as OpenCode's
	// detached spawn does.
	sc, err := toolShellPolicy(f).Wrap("/bin/bash", []string{"-c", "set -m; " + toolShell("sleep "+m+" & sleep "+m+"; echo survived") + " & wait $!; echo \"status $?\""})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := command(ctx, sc)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sleeps := waitProcs(t, m, "sleep", 2)
	// The nested bwrap leads the command's group, as the shell OpenCode
	// starts does: the tool shell execs it.
	leader := -1
	for _, p := range findProcs(t, m) {
		if strings.Contains(p.cmdline, sandbox.WrappedMarker) {
			leader = p.pid
			if p.pgid != p.pid {
				t.Fatalf("the nested bwrap does not lead its group: %+v", p)
			}
		}
	}
	if leader < 0 || sleeps[0].pgid != leader || sleeps[1].pgid != leader {
		t.Fatalf("the command's processes are not in one group: bwrap %d, sleeps %+v", leader, sleeps)
	}
	if err := syscall.Kill(-leader, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the agent: %v", err)
	}
	if out := stdout.String(); strings.Contains(out, "survived") || !strings.HasPrefix(out, "status ") || out == "status 0\n" {
		t.Fatalf("the agent saw %q", out)
	}
	assertGone(t, m)
}

// A terminal reaches the command: it can tell it has one, read its size,
// and an interactive bash reads what is typed.
func TestToolShellTerminal(t *testing.T) {
	requireBwrap(t)
	f := newFixture(t)
	script := toolShell(`[ -t 0 ] && [ -t 1 ] && echo is-a-terminal; stty size`) + "; " +
		sandbox.ToolShellPath + " --norc -i"
	sc, err := toolShellPolicy(f).Wrap("/bin/bash", []string{"-c", script})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := command(ctx, sc)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 33, Cols: 101})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	if _, err := tty.Write([]byte("echo typed-$((6*7))\nexit\n")); err != nil {
		t.Fatal(err)
	}
	// Reading ends with EIO once the last process that holds the
	// terminal is gone (or the context has killed the sandbox).
	var out bytes.Buffer
	_, _ = out.ReadFrom(tty)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %q", err, out.String())
	}
	lines := strings.Split(strings.ReplaceAll(out.String(), "\r", ""), "\n")
	for _, want := range []string{"is-a-terminal", "33 101", "typed-42"} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line %q in the terminal's output %q", want, out.String())
		}
	}
}
