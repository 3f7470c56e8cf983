package mockclaude_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tetherhq/tether/internal/mockclaude"
)

const (
	initLine = `{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}`
	userLine = `{"type":"user","message":{"role":"user","content":"hello"},"parent_tool_use_id":null,"session_id":"default"}`
)

// subprocess is this test binary re-executed as the mock (TestMain calls
// mockclaude.Main when TETHER_MOCKCLAUDE_MAIN=1).
type subprocess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr chan string // stderr lines; closed at EOF
}

func startMain(t *testing.T, dir, scenario string, args ...string) *subprocess {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), mockclaude.EnvMain+"=1", mockclaude.EnvScenario+"="+scenario)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &subprocess{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), stderr: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.stderr <- sc.Text()
		}
		close(p.stderr)
	}()
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, p.stdout)
		for range p.stderr {
		}
		_ = cmd.Wait()
	})
	return p
}

func (p *subprocess) write(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.stdin, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// readUntilResult reads stdout lines up to and including the result.
func (p *subprocess) readUntilResult(t *testing.T) []map[string]any {
	t.Helper()
	var msgs []map[string]any
	for {
		l, err := p.stdout.ReadBytes('\n')
		if err != nil {
			t.Fatalf("stdout ended before a result: %v (after %d messages)", err, len(msgs))
		}
		m, ok := object(l)
		if !ok {
			t.Fatalf("stdout line is not a JSON object: %s", l)
		}
		msgs = append(msgs, m)
		if m["type"] == "result" {
			return msgs
		}
	}
}

// exitCode drains the pipes and waits for the process.
func (p *subprocess) exitCode(t *testing.T) (int, string) {
	t.Helper()
	_, _ = io.Copy(io.Discard, p.stdout)
	var stderr []string
	for l := range p.stderr {
		stderr = append(stderr, l)
	}
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, strings.Join(stderr, "\n")
	case errors.As(err, &ee):
		return ee.ExitCode(), strings.Join(stderr, "\n")
	}
	t.Fatalf("wait: %v", err)
	return -1, ""
}

func TestMainCrashExitCode(t *testing.T) {
	p := startMain(t, t.TempDir(), "crash", sdkArgs()...)
	p.write(t, initLine, userLine)
	code, stderr := p.exitCode(t)
	if code != 3 || !strings.Contains(stderr, "mock: simulated crash") {
		t.Errorf("exit code %d, stderr %q", code, stderr)
	}
}

func TestMainSIGTERMEndsLinger(t *testing.T) {
	p := startMain(t, t.TempDir(), "linger", sdkArgs()...)
	p.write(t, initLine, userLine)
	p.readUntilResult(t)
	p.stdin.Close()
	for l := range p.stderr { // now it ignores EOF and stays
		if strings.Contains(l, "linger: stdin closed") {
			break
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, stderr := p.exitCode(t); code != 143 {
		t.Errorf("exit code %d after SIGTERM, want 143; stderr %q", code, stderr)
	}
}

func TestMainDemoEndToEnd(t *testing.T) {
	dir := t.TempDir()
	p := startMain(t, dir, "", sdkArgs("--permission-mode", "acceptEdits")...)
	p.write(t, initLine, userLine)
	msgs := p.readUntilResult(t)
	p.stdin.Close()
	if code, stderr := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d; stderr %q", code, stderr)
	}
	if msgs[0]["type"] != "control_response" || get(msgs[0], "response", "response", "pid") != float64(p.cmd.Process.Pid) {
		t.Errorf("initialize response = %v (child pid %d)", msgs[0], p.cmd.Process.Pid)
	}
	if res := msgs[len(msgs)-1]; res["subtype"] != "success" || res["num_turns"] != 2.0 {
		t.Errorf("result = %v", res)
	}
	b, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
	if err != nil || !strings.Contains(string(b), "hello") {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
}
