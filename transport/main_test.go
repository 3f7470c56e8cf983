package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: every
// Connect/Close cycle must release the goroutines it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// hangGuard bounds every wait in these tests. It only turns a hang into a
// failure; nothing asserts that anything is fast.
const hangGuard = 30 * time.Second

// Small shutdown steps so the escalation tests run quickly.
const (
	testExitGrace = 150 * time.Millisecond
	testTermGrace = 150 * time.Millisecond
)

// shell returns a Command running script under /bin/sh with short graces.
// Extra arguments become $1, $2, ... of the script.
func shell(script string, args ...string) *Command {
	return &Command{
		Path:        "/bin/sh",
		Args:        append([]string{"-c", script, "sh"}, args...),
		ExitGrace:   testExitGrace,
		TermGrace:   testTermGrace,
		EOFExitWait: hangGuard,
	}
}

// connect starts cmd and closes it when the test ends.
func connect(t *testing.T, cmd *Command) Conn {
	t.Helper()
	conn, err := cmd.Connect(context.Background())
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func guardCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// readLine reads one line, failing the test on error.
func readLine(t *testing.T, conn Conn) string {
	t.Helper()
	line, err := conn.Read(guardCtx(t))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return string(line)
}

// readErr reads expecting an error and returns it.
func readErr(t *testing.T, conn Conn) error {
	t.Helper()
	line, err := conn.Read(guardCtx(t))
	if err == nil {
		t.Fatalf("Read = %q, want an error", line)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read hung (hang guard fired)")
	}
	return err
}

func writeLine(t *testing.T, conn Conn, line string) {
	t.Helper()
	if err := conn.Write(guardCtx(t), []byte(line)); err != nil {
		t.Fatalf("Write(%.40q): %v", line, err)
	}
}

// closeConn closes conn within the hang guard and returns how long it took.
func closeConn(t *testing.T, conn Conn) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- conn.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatalf("Close hung")
	}
	return time.Since(start)
}

// pids parses a line of space-separated pids.
func pids(t *testing.T, line string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad pid line %q", line)
		}
		out = append(out, pid)
	}
	return out
}

// processGone reports whether pid no longer runs. A zombie counts as gone:
// an orphaned grandchild is reaped by init (or not, in some containers),
// which is outside our control.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	state := stat[i+2]
	return state == 'Z' || state == 'X'
}

// waitGone waits for pid to die: a SIGKILL is delivered asynchronously.
func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Errorf("%s (pid %d) still running", what, pid)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertReaped checks that our direct child left no zombie behind.
func assertReaped(t *testing.T, pid int) {
	t.Helper()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("child %d not reaped: /proc/%d still exists (err %v)", pid, pid, err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill(%d, 0) = %v, want ESRCH", pid, err)
	}
}
