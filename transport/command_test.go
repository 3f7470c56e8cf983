package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tetherhq/tether/protocol/ndjson"
	"go.uber.org/goleak"
)

var _ Transport = (*Command)(nil)

// Lines written concurrently reach a cat child and come back whole.
func TestCommandConcurrentWritesDoNotInterleave(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell("exec cat"))

	const writers, perWriter = 8, 12
	want := map[string]bool{}
	var lines [writers][perWriter]string
	for w := range writers {
		for i := range perWriter {
			// Mix small lines with lines far bigger than the pipe, which
			// the kernel takes in several partial writes.
			size := 10 + (w*perWriter+i)%3*40_000
			lines[w][i] = fmt.Sprintf("w%d-%d:%s", w, i, strings.Repeat(string(rune('a'+w)), size))
			want[lines[w][i]] = true
		}
	}

	got := make(chan []string, 1)
	go func() {
		var out []string
		for range writers * perWriter {
			line, err := conn.Read(guardCtx(t))
			if err != nil {
				t.Errorf("Read after %d lines: %v", len(out), err)
				break
			}
			out = append(out, string(line))
		}
		got <- out
	}()

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if err := conn.Write(guardCtx(t), []byte(lines[w][i])); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	out := <-got
	if len(out) != writers*perWriter {
		t.Fatalf("got %d lines, want %d", len(out), writers*perWriter)
	}
	seen := map[string]bool{}
	for _, line := range out {
		if !want[line] {
			t.Fatalf("got a line that was never written (interleaved?): %.60q... (%d bytes)", line, len(line))
		}
		if seen[line] {
			t.Fatalf("line %.20q arrived twice", line)
		}
		seen[line] = true
	}
	// Each writer's lines keep their order.
	next := make([]int, writers)
	for _, line := range out {
		var w, i int
		if _, err := fmt.Sscanf(line, "w%d-%d:", &w, &i); err != nil {
			t.Fatalf("parse %.20q: %v", line, err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: got line %d, want %d", w, i, next[w])
		}
		next[w]++
	}
}

// Read hands out slices the transport never touches again.
func TestCommandReadReturnsOwnedSlices(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell(`printf 'first\nsecond\nthird\n'`))
	first, err := conn.Read(guardCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	second, err := conn.Read(guardCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range second {
		second[i] = 'X' // scribbling on one line must not reach the others
	}
	third := readLine(t, conn)
	if string(first) != "first" || third != "third" {
		t.Errorf("lines = %q, %q; want first, third", first, third)
	}
	if err := readErr(t, conn); err != io.EOF {
		t.Errorf("Read at end = %v, want io.EOF", err)
	}
}

func TestCommandCleanExitIsEOF(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell(`echo '{"n":1}'; echo note >&2; exit 0`))
	if got := readLine(t, conn); got != `{"n":1}` {
		t.Errorf("line = %q", got)
	}
	for range 2 { // and it stays at EOF
		if err := readErr(t, conn); err != io.EOF {
			t.Fatalf("Read = %v, want io.EOF", err)
		}
	}
}

func TestCommandExitCode(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell(`echo '{"n":1}'; echo "fatal: no credentials" >&2; exit 3`))
	if got := readLine(t, conn); got != `{"n":1}` {
		t.Errorf("line = %q", got)
	}
	err := readErr(t, conn)
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("Read = %v (%T), want *ExitError", err, err)
	}
	if exit.Code != 3 || exit.Signal != "" {
		t.Errorf("ExitError = %+v, want Code 3 and no signal", exit)
	}
	if !strings.Contains(exit.StderrTail, "fatal: no credentials") {
		t.Errorf("StderrTail = %q, want the stderr text", exit.StderrTail)
	}
	if !strings.Contains(err.Error(), "code 3") || !strings.Contains(err.Error(), "fatal: no credentials") {
		t.Errorf("Error() = %q", err.Error())
	}
	// The outcome is sticky, not downgraded to a clean io.EOF.
	if again := readErr(t, conn); !errors.As(again, &exit) || exit.Code != 3 {
		t.Errorf("second Read = %v, want the same *ExitError", again)
	}
}

func TestCommandKilledBySignal(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell(`echo dying >&2; kill -9 $$`))
	err := readErr(t, conn)
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("Read = %v (%T), want *ExitError", err, err)
	}
	if exit.Signal != "SIGKILL" || exit.Code != -1 {
		t.Errorf("ExitError = %+v, want Signal SIGKILL, Code -1", exit)
	}
	if !strings.Contains(err.Error(), "killed by signal SIGKILL") {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestCommandStderrCallback(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		lines []string
	)
	cmd := shell(`i=0; while [ $i -lt 300 ]; do echo "err line $i" >&2; i=$((i+1)); done
printf 'crlf line\r\n' >&2
printf 'no newline at end' >&2
exit 1`)
	cmd.StderrTailSize = 40
	cmd.Stderr = func(line string) {
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
	}
	conn := connect(t, cmd)
	err := readErr(t, conn)
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != 1 {
		t.Fatalf("Read = %v, want *ExitError with code 1", err)
	}
	if len(exit.StderrTail) > 40 || !strings.HasSuffix(exit.StderrTail, "no newline at end") {
		t.Errorf("StderrTail = %q, want at most 40 bytes ending the stderr", exit.StderrTail)
	}
	closeConn(t, conn) // the last callback has run once Close returns

	var want []string
	for i := range 300 {
		want = append(want, fmt.Sprintf("err line %d", i))
	}
	want = append(want, "crlf line", "no newline at end")
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("callback got %d lines, want %d; first diff:", len(lines), len(want))
		for i := range min(len(lines), len(want)) {
			if lines[i] != want[i] {
				t.Errorf("  line %d = %q, want %q", i, lines[i], want[i])
				break
			}
		}
	}
}

// A stderr line with no end in sight is passed on in bounded pieces.
func TestCommandStderrLongLine(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		pieces []string
	)
	cmd := shell(`printf '%100000s\n' '' | tr ' ' x >&2; echo short >&2`)
	cmd.Stderr = func(line string) {
		mu.Lock()
		pieces = append(pieces, line)
		mu.Unlock()
	}
	conn := connect(t, cmd)
	if err := readErr(t, conn); err != io.EOF {
		t.Fatalf("Read = %v, want io.EOF", err)
	}
	closeConn(t, conn)
	mu.Lock()
	defer mu.Unlock()
	if len(pieces) < 2 || pieces[len(pieces)-1] != "short" {
		t.Fatalf("got %d pieces %.40q; want the long line then \"short\"", len(pieces), pieces)
	}
	for _, p := range pieces {
		if len(p) > stderrLineMax {
			t.Errorf("piece of %d bytes, want at most %d", len(p), stderrLineMax)
		}
	}
	if long := strings.Join(pieces[:len(pieces)-1], ""); long != strings.Repeat("x", 100000) {
		t.Errorf("pieces join to %d bytes, want 100000 x's", len(long))
	}
}

func TestCommandTruncatedLineThenExitError(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell(`echo whole; printf '{"half":'; exit 1`))
	if got := readLine(t, conn); got != "whole" {
		t.Errorf("line = %q", got)
	}
	err := readErr(t, conn)
	var trunc *ndjson.TruncatedLineError
	if !errors.Is(err, ndjson.ErrSkipped) || !errors.As(err, &trunc) {
		t.Fatalf("Read = %v (%T), want *ndjson.TruncatedLineError matching ErrSkipped", err, err)
	}
	if trunc.Size != len(`{"half":`) {
		t.Errorf("TruncatedLineError.Size = %d", trunc.Size)
	}
	err = readErr(t, conn)
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != 1 {
		t.Fatalf("Read = %v, want *ExitError with code 1", err)
	}
}

func TestCommandLineTooLongIsSkipped(t *testing.T) {
	t.Parallel()
	cmd := shell(`echo before; printf '%5000s\n' '' | tr ' ' x; echo after`)
	cmd.MaxLineSize = 1024
	conn := connect(t, cmd)
	if got := readLine(t, conn); got != "before" {
		t.Errorf("line = %q", got)
	}
	err := readErr(t, conn)
	var long *ndjson.LineTooLongError
	if !errors.Is(err, ndjson.ErrSkipped) || !errors.As(err, &long) {
		t.Fatalf("Read = %v (%T), want *ndjson.LineTooLongError matching ErrSkipped", err, err)
	}
	if long.Size != 5000 || long.Limit != 1024 {
		t.Errorf("LineTooLongError = %+v, want Size 5000 Limit 1024", long)
	}
	if got := readLine(t, conn); got != "after" {
		t.Errorf("line after the skipped one = %q, want after", got)
	}
	if err := readErr(t, conn); err != io.EOF {
		t.Errorf("Read = %v, want io.EOF", err)
	}
}

// A child that closes stdout and lingers reads as a clean end after
// EOFExitWait, and Close ends it and what it spawned.
func TestCommandStdoutClosedButLingering(t *testing.T) {
	t.Parallel()
	cmd := shell(`sleep 60 >/dev/null & echo $$ $!; exec 1>&-; wait`)
	cmd.EOFExitWait = 100 * time.Millisecond
	conn := connect(t, cmd)
	ids := pids(t, readLine(t, conn))
	if err := readErr(t, conn); err != io.EOF {
		t.Fatalf("Read = %v, want io.EOF", err)
	}
	if processGone(ids[0]) {
		t.Fatalf("child already gone; the test needs it to linger")
	}
	closeConn(t, conn)
	assertReaped(t, ids[0])
	waitGone(t, "grandchild", ids[1])
	if _, err := conn.Read(guardCtx(t)); err != ErrClosed {
		t.Errorf("Read after Close = %v, want ErrClosed", err)
	}
}

// Close escalates to SIGKILL on a child that ignores SIGTERM, and nothing
// it spawned survives it.
func TestCommandCloseKillsStubbornChildAndGroup(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell(`trap "" TERM; sleep 60 & echo $$ $!; wait`))
	ids := pids(t, readLine(t, conn))
	took := closeConn(t, conn)
	if minimum := testExitGrace + testTermGrace; took < minimum {
		t.Errorf("Close took %v; a child ignoring SIGTERM cannot end before %v", took, minimum)
	}
	assertReaped(t, ids[0])
	waitGone(t, "grandchild", ids[1])
}

// A child that exits on SIGTERM is stopped by Close, grandchildren too.
func TestCommandCloseTerminates(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell(`sleep 60 & echo $$ $!; wait`))
	ids := pids(t, readLine(t, conn))
	closeConn(t, conn)
	assertReaped(t, ids[0])
	waitGone(t, "grandchild", ids[1])
}

// When the child exits on its own, its leftover descendants are killed at
// once: one still holding stdout does not keep Read from reaching the end.
func TestCommandExitSweepsGroup(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell(`sleep 60 & echo $!; exit 0`))
	grandchild := pids(t, readLine(t, conn))[0]
	if err := readErr(t, conn); err != io.EOF {
		t.Fatalf("Read = %v, want io.EOF", err)
	}
	waitGone(t, "grandchild", grandchild)
}

// A cancelled Read returns promptly and loses nothing: the half line it
// had already taken in is completed by the next Read.
func TestCommandReadHonoursContext(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell(`printf '{"par'; read go; printf 'tial":1}\n'; echo after`))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		line, err := conn.Read(ctx)
		if err == nil {
			err = fmt.Errorf("got line %q", line)
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the half line arrive (not required)
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("cancelled Read = %v, want context.Canceled", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Read ignored ctx cancellation")
	}
	if _, err := conn.Read(ctx); err != context.Canceled {
		t.Errorf("Read with a done ctx = %v, want context.Canceled", err)
	}

	writeLine(t, conn, "go")
	if got := readLine(t, conn); got != `{"partial":1}` {
		t.Errorf("line = %q, want the whole line", got)
	}
	if got := readLine(t, conn); got != "after" {
		t.Errorf("line = %q", got)
	}
}

// Cancellations racing with completed reads and writes never leave a stale
// deadline behind (which would fail later calls with os.ErrDeadlineExceeded).
func TestCommandReadCancelRace(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell("exec cat"))
	const n = 300
	go func() {
		for i := 0; i < n; {
			ctx, cancel := context.WithCancel(context.Background())
			go cancel()
			err := conn.Write(ctx, fmt.Appendf(nil, "%d", i))
			cancel()
			switch {
			case err == context.Canceled:
				continue // short lines go out whole or not at all: retry
			case err != nil:
				t.Errorf("Write %d: %v", i, err)
				return
			}
			i++
		}
	}()
	deadline := time.Now().Add(hangGuard)
	for i := 0; i < n; {
		if time.Now().After(deadline) {
			t.Fatalf("stuck at line %d", i)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go cancel() // lands before, during or after the read
		line, err := conn.Read(ctx)
		cancel()
		switch {
		case err == context.Canceled:
			continue
		case err != nil:
			t.Fatalf("Read %d: %v", i, err)
		case string(line) != fmt.Sprint(i):
			t.Fatalf("Read %d = %q", i, line)
		}
		i++
	}
}

// Write honours ctx when the pipe is full, and a Write cancelled before any
// of its line went out leaves the stream usable.
func TestCommandWriteHonoursContextWhenPipeFull(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	conn := connect(t, shell(`while [ ! -e "$1" ]; do sleep 0.02; done; exec cat`, gate))

	// Lines of exactly PIPE_BUF bytes: the kernel writes each whole or not
	// at all, so the cancelled one cannot have been half sent.
	line := strings.Repeat("y", 4095)
	sent := 0
	for ; ; sent++ {
		if sent > 10_000 {
			t.Fatal("the pipe never filled up")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := conn.Write(ctx, []byte(line))
		cancel()
		if err == nil {
			continue
		}
		if err != context.DeadlineExceeded {
			t.Fatalf("Write to a full pipe = %v, want context.DeadlineExceeded", err)
		}
		break
	}
	if sent == 0 {
		t.Fatal("no line fitted in the pipe")
	}

	// Release the child and check that every line arrives whole.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		for i := range sent {
			l, err := conn.Read(guardCtx(t))
			if err != nil || string(l) != line {
				got <- fmt.Errorf("line %d: %d bytes, err %v", i, len(l), err)
				return
			}
		}
		l, err := conn.Read(guardCtx(t))
		if err != nil || string(l) != "last" {
			got <- fmt.Errorf("last line = %.20q, %v", l, err)
			return
		}
		got <- nil
	}()
	writeLine(t, conn, "last")
	if err := <-got; err != nil {
		t.Error(err)
	}
}

// A Write cancelled after part of its line went out makes later Writes fail
// instead of gluing their line to that part.
func TestCommandWriteCancelledMidLine(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell("exec sleep 60")) // never reads stdin
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- conn.Write(ctx, make([]byte, 4<<20)) }() // far over any pipe size
	waitPipeFilling(t, conn)
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("Write = %v, want context.Canceled", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Write ignored ctx cancellation")
	}
	err := conn.Write(guardCtx(t), []byte("next"))
	if !errors.Is(err, errWriteTorn) {
		t.Errorf("Write after a torn line = %v, want errWriteTorn", err)
	}
}

// A Write waiting for another to finish honours its own ctx, and its
// cancellation does not disturb the Write in progress.
func TestCommandQueuedWriteHonoursContext(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell("exec sleep 60"))
	first := make(chan error, 1)
	go func() { first <- conn.Write(context.Background(), make([]byte, 4<<20)) }()
	waitPipeFilling(t, conn) // the first Write is under way

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := conn.Write(ctx, []byte("queued")); err != context.DeadlineExceeded {
		t.Errorf("queued Write = %v, want context.DeadlineExceeded", err)
	}
	select {
	case err := <-first:
		t.Fatalf("the blocked Write returned early: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	closeConn(t, conn)
	select {
	case err := <-first:
		if err != ErrClosed {
			t.Errorf("blocked Write after Close = %v, want ErrClosed", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Close did not unblock Write")
	}
}

func TestCommandWriteRejectsNewline(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell("exec cat"))
	if err := conn.Write(guardCtx(t), []byte("a\nb")); !errors.Is(err, ndjson.ErrNewlineInLine) {
		t.Errorf("Write = %v, want ndjson.ErrNewlineInLine", err)
	}
}

func TestCommandCloseWrite(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell("exec cat"))
	writeLine(t, conn, "x")
	if err := conn.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if err := conn.CloseWrite(); err != nil {
		t.Errorf("second CloseWrite = %v", err)
	}
	if err := conn.Write(guardCtx(t), []byte("y")); err != ErrClosed {
		t.Errorf("Write after CloseWrite = %v, want ErrClosed", err)
	}
	if got := readLine(t, conn); got != "x" {
		t.Errorf("line = %q", got)
	}
	if err := readErr(t, conn); err != io.EOF {
		t.Errorf("Read = %v, want io.EOF (cat exits on end of input)", err)
	}
}

func TestCommandCloseIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell("exec cat"))
	writeLine(t, conn, "unread")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { closeConn(t, conn) })
	}
	wg.Wait()
	closeConn(t, conn)
	if _, err := conn.Read(guardCtx(t)); err != ErrClosed {
		t.Errorf("Read after Close = %v, want ErrClosed", err)
	}
	if err := conn.Write(guardCtx(t), []byte("x")); err != ErrClosed {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	_ = conn.CloseWrite() // must not hang or panic
}

// Close wakes a Read blocked on a silent child.
func TestCommandCloseUnblocksRead(t *testing.T) {
	t.Parallel()
	conn := connect(t, shell("exec sleep 60"))
	done := make(chan error, 1)
	go func() {
		line, err := conn.Read(context.Background())
		if err == nil {
			err = fmt.Errorf("got line %q", line)
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it block (not required)
	closeConn(t, conn)
	select {
	case err := <-done:
		var exit *ExitError
		if !errors.As(err, &exit) && err != ErrClosed && err != io.EOF {
			t.Errorf("Read during Close = %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Close did not unblock Read")
	}
}

func TestCommandConnectMissingBinary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path string
		want error
	}{
		{"tether-no-such-agent-binary", exec.ErrNotFound},
		{"/nonexistent/tether/agent", fs.ErrNotExist},
	} {
		conn, err := (&Command{Path: tc.path}).Connect(context.Background())
		if err == nil {
			_ = conn.Close()
			t.Fatalf("Connect(%s) succeeded", tc.path)
		}
		var start *StartError
		if !errors.As(err, &start) || start.Path != tc.path {
			t.Errorf("Connect(%s) = %v (%T), want *StartError", tc.path, err, err)
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("Connect(%s) = %v, want it to match %v", tc.path, err, tc.want)
		}
	}
}

func TestCommandConnectCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if conn, err := shell("exit 0").Connect(ctx); err != context.Canceled {
		if conn != nil {
			_ = conn.Close()
		}
		t.Errorf("Connect = %v, want context.Canceled", err)
	}
}

func TestCommandEnvAndDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := shell(`echo "$TETHER_TEST_VAR"; pwd -P`)
	cmd.Env = []string{"TETHER_TEST_VAR=hello"}
	cmd.Dir = dir
	conn := connect(t, cmd)
	if got := readLine(t, conn); got != "hello" {
		t.Errorf("env var = %q", got)
	}
	want, _ := filepath.EvalSymlinks(dir)
	if got := readLine(t, conn); got != want {
		t.Errorf("dir = %q, want %q", got, want)
	}
}

// Many start/stop cycles release every goroutine, descriptor and process.
// Not parallel, so nothing else runs while it counts.
func TestCommandCyclesLeakNothing(t *testing.T) {
	cycle := func() {
		conn := connect(t, shell(`echo $$; exec cat`))
		pid := pids(t, readLine(t, conn))[0]
		writeLine(t, conn, "ping")
		if got := readLine(t, conn); got != "ping" {
			t.Fatalf("line = %q", got)
		}
		closeConn(t, conn)
		assertReaped(t, pid)
	}
	cycle() // warm up whatever the runtime opens once
	fds := openFDs(t)
	for range 25 {
		cycle()
	}
	if now := openFDs(t); now != fds {
		t.Errorf("open descriptors went from %d to %d", fds, now)
	}
	goleak.VerifyNone(t)
}

func openFDs(t *testing.T) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func TestExitErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		err  ExitError
		want string
	}{
		{ExitError{Code: 2}, "agent process exited with code 2"},
		{ExitError{Code: 1, StderrTail: "boom"}, "agent process exited with code 1; stderr: boom"},
		{ExitError{Code: -1, Signal: "SIGKILL"}, "agent process was killed by signal SIGKILL"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	err := &StartError{Path: "claude", Err: os.ErrPermission}
	if !errors.Is(err, os.ErrPermission) || err.Error() != "start claude: permission denied" {
		t.Errorf("StartError = %q", err)
	}
}

func TestTailBuffer(t *testing.T) {
	tail := &tailBuffer{n: 8}
	for _, s := range []string{"abc", "defgh", "ijklmnopqrstuvwxyz", "12"} {
		_, _ = tail.Write([]byte(s))
	}
	if got := tail.String(); got != "uvwxyz12" {
		t.Errorf("tail = %q, want uvwxyz12", got)
	}
}

// waitPipeFilling waits until part of a line sits in the child's stdin pipe,
// that is, until a Write is under way.
func waitPipeFilling(t *testing.T, conn Conn) {
	t.Helper()
	raw, err := conn.(*commandConn).stdin.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(hangGuard)
	for {
		var queued int32
		var errno syscall.Errno
		if err := raw.Control(func(fd uintptr) {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&queued)))
		}); err != nil || errno != 0 {
			t.Fatalf("FIONREAD: %v %v", err, errno)
		}
		if queued > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing reached the pipe")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Pdeathsig fires when the thread that forked the child exits. A caller on
// a locked thread that then ends must not take the child down with it.
func TestCommandSurvivesCallerThreadExit(t *testing.T) {
	t.Parallel()
	type result struct {
		conn Conn
		tid  int
		err  error
	}
	// The main thread never exits (the runtime parks it instead), so a
	// goroutine that lands on it keeps it busy and the next one tries again.
	holdMain := make(chan struct{})
	t.Cleanup(func() { close(holdMain) })
	var r result
	for attempt := 0; ; attempt++ {
		if attempt == 100 {
			t.Fatal("could not get off the main thread")
		}
		started := make(chan result, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with us
			if syscall.Gettid() == os.Getpid() {
				started <- result{tid: -1}
				<-holdMain
				runtime.UnlockOSThread()
				return
			}
			conn, err := shell("exec cat").Connect(context.Background())
			started <- result{conn, syscall.Gettid(), err}
		}()
		if r = <-started; r.tid != -1 {
			break
		}
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { _ = r.conn.Close() })
	deadline := time.Now().Add(hangGuard)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", r.tid)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the locked thread did not exit")
		}
		time.Sleep(5 * time.Millisecond)
	}
	writeLine(t, r.conn, "still alive")
	if got := readLine(t, r.conn); got != "still alive" {
		t.Errorf("line = %q", got)
	}
}

// A child whose stdout shares stderr's pipe: its lines of both reach the
// Stderr callback in the order written, Read reports only the end, and
// Done and Err say when and how it ended, with or without a Launcher.
func TestCommandStdoutToStderr(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		var (
			mu    sync.Mutex
			lines []string
		)
		cmd := shell(`echo "listening on here"; echo "a log" >&2; echo "more out"; read x; exit 3`)
		cmd.StdoutToStderr = true
		if shared {
			cmd.Launcher = &Launcher{}
		}
		heard := make(chan struct{}, 3)
		cmd.Stderr = func(line string) {
			mu.Lock()
			lines = append(lines, line)
			mu.Unlock()
			heard <- struct{}{}
		}
		conn := connect(t, cmd)
		proc, ok := conn.(Exiter)
		if !ok {
			t.Fatalf("%T is no Exiter", conn)
		}
		for range 3 {
			select {
			case <-heard:
			case <-time.After(10 * time.Second):
				t.Fatal("the child's output did not reach Stderr")
			}
		}
		select {
		case <-proc.Done():
			t.Fatal("Done before the child ended")
		default:
		}
		if proc.Err() != nil {
			t.Fatalf("Err while the child runs: %v", proc.Err())
		}
		if err := conn.Write(context.Background(), []byte("go")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-proc.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Done did not close when the child ended")
		}
		var exit *ExitError
		if err := proc.Err(); !errors.As(err, &exit) || exit.Code != 3 || !strings.Contains(exit.StderrTail, "more out") {
			t.Fatalf("Err = %v, want *ExitError with code 3 quoting the output", err)
		}
		if err := readErr(t, conn); !errors.As(err, &exit) || exit.Code != 3 {
			t.Fatalf("Read = %v, want the same *ExitError", err)
		}
		closeConn(t, conn)
		mu.Lock()
		if got := strings.Join(lines, "|"); got != "listening on here|a log|more out" {
			t.Errorf("launcher %v: Stderr got %q", shared, got)
		}
		mu.Unlock()
	}
}
