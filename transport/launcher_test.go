package transport

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

// Idle children of one Launcher have no goroutines of their own: their
// exits and stderr are waited for by the Launcher's one watcher, besides
// its thread's goroutine. Not parallel, so nothing else starts goroutines.
func TestLauncherIdleChildrenHoldNoGoroutines(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the shared watcher is Linux's")
	}
	var l Launcher
	const n = 20
	before := runtime.NumGoroutine()
	conns := make([]Conn, n)
	for i := range conns {
		cmd := shell("exec cat")
		cmd.Launcher = &l
		cmd.Stderr = func(string) {}
		conns[i] = connect(t, cmd)
	}
	if grew := runtime.NumGoroutine() - before; grew > 2 {
		t.Errorf("%d idle children added %d goroutines, want at most 2 (the Launcher's thread and watcher)", n, grew)
	}
	for _, conn := range conns {
		closeConn(t, conn)
	}
	goleak.VerifyNone(t)
}

// Through a Launcher's watcher, a child that talks on stderr while it
// idles and then dies still ends with its cause: every stderr line reaches
// the callback, the tail is quoted in the exit error, and the exit is seen
// while nothing reads.
func TestLauncherChildExitAndStderr(t *testing.T) {
	var l Launcher
	var (
		mu    sync.Mutex
		lines []string
	)
	cmd := shell(`read x; i=0; while [ $i -lt 200 ]; do echo "err line $i" >&2; i=$((i+1)); done
printf 'last words' >&2; exit 3`)
	cmd.Launcher = &l
	cmd.Stderr = func(line string) {
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
	}
	conn := connect(t, cmd)
	other := shell("exec cat") // another child, idle all along
	other.Launcher = &l
	idle := connect(t, other)
	time.Sleep(50 * time.Millisecond) // both idle in the watcher
	writeLine(t, conn, "go")
	c := conn.(*commandConn)
	select {
	case <-c.exited: // seen without a Read
	case <-time.After(hangGuard):
		t.Fatal("the exit was not seen")
	}
	err := readErr(t, conn)
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != 3 {
		t.Fatalf("Read = %v, want *ExitError with code 3", err)
	}
	if !strings.HasSuffix(exit.StderrTail, "err line 199\nlast words") {
		t.Errorf("StderrTail ends %q", exit.StderrTail[max(0, len(exit.StderrTail)-40):])
	}
	closeConn(t, conn)
	mu.Lock()
	if len(lines) != 201 || lines[0] != "err line 0" || lines[200] != "last words" {
		t.Errorf("callback got %d lines (%.3q …), want 201", len(lines), lines)
	}
	mu.Unlock()
	writeLine(t, idle, "still here")
	if got := readLine(t, idle); got != "still here" {
		t.Errorf("the other child read %q", got)
	}
	closeConn(t, idle)
	goleak.VerifyNone(t)
}
