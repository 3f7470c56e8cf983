package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// sgrRE matches an ANSI styling sequence (colour, dim, bold, reset); the
// spinner's cursor and erase sequences are not styling.
var sgrRE = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// spinnerRE matches a frame of the spinner.
var spinnerRE = regexp.MustCompile(`\r[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] `)

// tookRE matches a spinner frame that shows the time taken.
var tookRE = regexp.MustCompile(`\r[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] [^\r\x1b]* [0-9]+s\x1b\[K`)

// ttyRun is a `tether run` on a pseudo-terminal: stdin, stdout and stderr
// are all the terminal, as in a shell.
type ttyRun struct {
	cmd  *exec.Cmd
	ptm  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startTTY(t *testing.T, env []string, args ...string) *ttyRun {
	t.Helper()
	return startTTYCmd(t, exec.Command(tetherPath(), args...), env)
}

// startTTYCmd is startTTY for a command whose stdio may be set already:
// what is not goes to the terminal.
func startTTYCmd(t *testing.T, cmd *exec.Cmd, env []string) *ttyRun {
	t.Helper()
	cmd.Env = env
	cmd.Dir = t.TempDir()
	ptm, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	r := &ttyRun{cmd: cmd, ptm: ptm, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil { // EIO once the child has closed the terminal
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = ptm.Close()
		<-r.done
	})
	return r
}

func (r *ttyRun) screen() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitFor waits until the terminal shows something re matches.
func (r *ttyRun) waitFor(t *testing.T, re *regexp.Regexp) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !re.MatchString(r.screen()) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %v:\n%q", re, r.screen())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exit waits for the process and the last of its output.
func (r *ttyRun) exit(t *testing.T) int {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(waitLimit):
		t.Fatalf("tether run still running:\n%q", r.screen())
	}
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
	}
	return r.cmd.ProcessState.ExitCode()
}

// On a terminal, `tether run` shows a spinner while the agent works and
// styles its output, unless NO_COLOR is set (to anything but ""); Ctrl-C
// typed on the terminal interrupts the turn.
func TestRunOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     []string
		colours bool
	}{
		{"colours", nil, true},
		{"NO_COLOR", []string{"NO_COLOR=1"}, false},
		{"empty NO_COLOR", []string{"NO_COLOR="}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(withoutEnv(cleanEnv(), "NO_COLOR"), append([]string{"TERM=xterm-256color"}, tc.env...)...)
			r := startTTY(t, env, "run", "--agent", "mock", "look around, SLOW")
			r.waitFor(t, spinnerRE) // the agent is working
			if tc.name == "colours" {
				r.waitFor(t, tookRE) // and after a second, for how long
			}
			if _, err := io.WriteString(r.ptm, "\x03"); err != nil {
				t.Fatal(err)
			}
			if code := r.exit(t); code != 1 {
				t.Errorf("exit code %d after an interrupted turn, want 1:\n%q", code, r.screen())
			}
			screen := r.screen()
			if !strings.Contains(screen, "interrupted") {
				t.Errorf("no interrupted summary:\n%q", screen)
			}
			if got := sgrRE.MatchString(screen); got != tc.colours {
				t.Errorf("styled output %v, want %v:\n%q", got, tc.colours, screen)
			}
		})
	}
}

// With stdout on a terminal and stderr into a file, the file gets no
// styling: colours only where a terminal shows them.
func TestRunStderrIntoAFileIsPlain(t *testing.T) {
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd := exec.Command(tetherPath(), "run", "--agent", "mock", "FAIL_TURN please")
	cmd.Stderr = errFile
	r := startTTYCmd(t, cmd, append(withoutEnv(cleanEnv(), "NO_COLOR"), "TERM=xterm-256color"))
	if code := r.exit(t); code != 1 {
		t.Fatalf("exit %d after a failed turn:\n%q", code, r.screen())
	}
	stderr, err := os.ReadFile(errFile.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !sgrRE.MatchString(r.screen()) {
		t.Errorf("stdout on the terminal is not styled: %q", r.screen())
	}
	if len(stderr) == 0 || strings.Contains(string(stderr), "\x1b") {
		t.Errorf("stderr into a file: %q", stderr)
	}
}

// Off a terminal there is neither styling nor a spinner.
func TestRunOffATerminalIsPlain(t *testing.T) {
	// tether() adds env to this process's own: an empty NO_COLOR overrides
	// one the tests inherit, and asks for colour.
	r := tether(t, t.TempDir(), "", append(cleanEnvOnly(), "TERM=xterm-256color", "NO_COLOR="),
		"run", "--agent", "mock", "look around")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for name, s := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
		if strings.Contains(s, "\x1b") || spinnerRE.MatchString(s) {
			t.Errorf("%s has terminal sequences off a terminal: %q", name, s)
		}
	}
	if !strings.Contains(r.stdout, "mock") {
		t.Errorf("no reply on stdout: %q", r.stdout)
	}
}

// withoutEnv is env without the variable named.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
