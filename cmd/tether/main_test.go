package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/mockclaude"
	"go.uber.org/goleak"
)

// waitLimit bounds every tether process a test starts.
const waitLimit = 30 * time.Second

// binDir is where TestMain builds tether: named after this process, so
// tests find it without shared state.
func binDir() string {
	return filepath.Join(os.TempDir(), "tether-cmd-test-"+strconv.Itoa(os.Getpid()))
}

func tetherPath() string { return filepath.Join(binDir(), "tether") }

// TestMain builds the tether binary once; the tests run it as a person would.
func TestMain(m *testing.M) {
	out, err := exec.Command("go", "build", "-o", tetherPath(), ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building tether: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(binDir())
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// result is a finished tether process.
type result struct {
	code           int
	stdout, stderr string
}

// tether runs the binary in dir with stdin and extra environment.
func tether(t *testing.T, dir, stdin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, tetherPath(), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("tether %v: %v", args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

func TestRunMockAllow(t *testing.T) {
	dir := t.TempDir()
	r := tether(t, dir, "", nil, "run", "--mock", "--approve=allow", "hello")
	if r.code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`You said: "hello"`, "\n⏺ Write hello.txt\n", "  ⎿ File created successfully", "\n✓ 2 turns · ", " · session "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "hello.txt")); err != nil {
		t.Errorf("hello.txt: %v", err)
	}
}

func TestRunMockRawPrintsOnlyTheCLILines(t *testing.T) {
	dir := t.TempDir()
	r := tether(t, dir, "", nil, "run", "--mock", "--raw", "--approve=deny", "hi")
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	for _, l := range lines {
		var m struct{ Type string }
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.Type == "" {
			t.Errorf("not a typed JSON line (%v): %q", err, l)
		}
	}
	if len(lines) < 10 || !strings.HasPrefix(lines[len(lines)-1], `{"type":"result"`) {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
	if _, err := os.Stat(filepath.Join(dir, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("hello.txt exists after --approve=deny (stat: %v)", err)
	}
}

func TestRunPromptFromStdin(t *testing.T) {
	r := tether(t, t.TempDir(), "from a pipe\n", nil, "run", "--mock", "--approve=deny", "-")
	if r.code != 0 || !strings.Contains(r.stdout, `You said: "from a pipe"`) {
		t.Errorf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for name, c := range map[string]struct {
		args  []string
		stdin string
		want  string
	}{
		"no prompt":           {[]string{"run"}, "", "missing PROMPT"},
		"empty stdin":         {[]string{"run", "--mock", "-"}, "  \n", "the prompt is empty"},
		"unknown flag":        {[]string{"run", "--bogus", "hi"}, "", "unknown flag: --bogus"},
		"bad approve":         {[]string{"run", "--approve=maybe", "hi"}, "", "--approve must be"},
		"bad mode":            {[]string{"run", "--permission-mode=yolo", "hi"}, "", "--permission-mode"},
		"mock and cli":        {[]string{"run", "--mock", "--cli=/bin/true", "hi"}, "", "--mock runs the built-in mock agent, --cli names a real claude executable: give one of them"},
		"cli and runner":      {[]string{"run", "--cli=/bin/true", "--runner=ws://127.0.0.1:1/sessions", "hi"}, "", "a runner runs its own claude CLI (tether serve --cli)"},
		"resume and continue": {[]string{"run", "--continue", "--resume=x", "hi"}, "", "give one of them"},
		"unknown subcmd":      {[]string{"walk"}, "", `unknown command "walk"`},
	} {
		t.Run(name, func(t *testing.T) {
			r := tether(t, t.TempDir(), c.stdin, nil, c.args...)
			if strings.Contains(r.stderr, "flags in the group") {
				t.Errorf("cobra's raw flag-group message:\n%s", r.stderr)
			}
			if r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "Usage:") {
				t.Errorf("exit code %d, stderr:\n%s", r.code, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q", r.stdout)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	r := tether(t, t.TempDir(), "", []string{"PATH=" + t.TempDir()}, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "tether ") || !strings.Contains(r.stdout, "claude: not found") {
		t.Errorf("exit code %d, stdout %q", r.code, r.stdout)
	}
}

func TestHiddenMockCommand(t *testing.T) {
	r := tether(t, t.TempDir(), "", nil, "mock-claude", "-v")
	if r.code != 0 || !strings.Contains(r.stdout, "tether mockclaude") {
		t.Errorf("exit code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestSignalInterruptsTheTurn: one Ctrl-C (or a SIGTERM) stops the turn,
// tether prints the interrupted summary and exits 1 (the turn did not
// complete), and the agent process is gone.
func TestSignalInterruptsTheTurn(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { signalMidTurn(t, sig) })
	}
}

func signalMidTurn(t *testing.T, sig syscall.Signal) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, tetherPath(), "run", "--mock", "hi")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), mockclaude.EnvScenario+"=slow")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	first, err := out.ReadByte() // the turn is streaming
	if err != nil {
		t.Fatal(err)
	}
	agents := children(cmd.Process.Pid)
	if len(agents) != 1 {
		t.Errorf("tether has %d child processes, want the agent alone", len(agents))
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	err = cmd.Wait()
	text := string(first) + string(rest)
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit code %d (%v), want 1\nstdout:\n%s\nstderr:\n%s", code, err, text, stderr.String())
	}
	if !strings.Contains(text, "\n⏹ interrupted · ") || strings.Contains(text, "tick 50") {
		t.Errorf("stdout:\n%s", text)
	}
	for _, pid := range agents {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Errorf("agent process %d outlived tether", pid)
		}
	}
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so cut at the last ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, child)
		}
	}
	return kids
}
