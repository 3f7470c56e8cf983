package transport

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// Children started through one Launcher share its thread: starting many
// adds no thread per child, they outlive the goroutines that started them
// (on locked threads that then end), and the Launcher's goroutine ends
// after the last of them. Not parallel, so nothing else makes threads.
func TestLauncherSharesOneThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/task")
	}
	var l Launcher
	const n = 30
	before := threads(t)
	conns := make([]Conn, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range conns {
		wg.Go(func() {
			// Locked and never unlocked: this thread ends with the
			// goroutine, and must not take the child with it.
			runtime.LockOSThread()
			cmd := shell("exec cat")
			cmd.Launcher = &l
			conn, err := cmd.Connect(context.Background())
			conns[i] = conn
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, conn := range conns {
		line := "child " + strconv.Itoa(i)
		writeLine(t, conn, line)
		if got := readLine(t, conn); got != line {
			t.Fatalf("child %d: read %q", i, got)
		}
	}
	// The locked starters' threads are gone; the children run on.
	if grew := threads(t) - before; grew > n/3 {
		t.Errorf("%d children added %d threads", n, grew)
	}
	for _, conn := range conns {
		closeConn(t, conn)
	}
	goleak.VerifyNone(t)
}

// A child that fails to start releases its place: the Launcher holds no
// thread afterwards, and starts the next child as usual.
func TestLauncherStartFailure(t *testing.T) {
	var l Launcher
	cmd := &Command{Path: "/nonexistent/agent", Launcher: &l}
	if _, err := cmd.Connect(context.Background()); err == nil {
		t.Fatal("Connect of a missing binary succeeded")
	}
	l.mu.Lock()
	live, running := l.live, l.reqs != nil
	l.mu.Unlock()
	if live != 0 || running {
		t.Fatalf("after a failed start: %d live, thread running %v", live, running)
	}
	cmd = shell("echo $$")
	cmd.Launcher = &l
	conn := connect(t, cmd)
	pid := pids(t, readLine(t, conn))[0]
	closeConn(t, conn)
	assertReaped(t, pid)
}

func threads(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// The stderr splitter passes on lines across reads, trims a line's "\r",
// cuts an endless line into pieces, and flushes a last line without "\n".
func TestStderrLines(t *testing.T) {
	var got []string
	s := &stderrLines{emit: func(line string) { got = append(got, line) }}
	long := strings.Repeat("x", 2*stderrLineMax+5)
	for _, p := range []string{"one\ntw", "o\r\n\n", long[:100], long[100:] + "\n", "last"} {
		s.write([]byte(p))
	}
	s.flush()
	want := []string{"one", "two", "", long[:stderrLineMax], long[stderrLineMax : 2*stderrLineMax], "xxxxx", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines = %.60q\nwant    %.60q", got, want)
	}
	if cap(s.part) > stderrReadSize {
		t.Errorf("after the long line the splitter keeps %d bytes", cap(s.part))
	}
}
