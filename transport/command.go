package transport

import (
	"context"
	"errors"
	"golang.org/x/sys/unix"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tetherhq/tether/protocol/ndjson"
)

// Default shutdown steps, as the official SDKs use: time to flush the
// session file after stdin closes, then after SIGTERM.
const (
	DefaultExitGrace = 5 * time.Second
	DefaultTermGrace = 5 * time.Second
)

// Command runs an agent as a child process and talks NDJSON over its stdin
// and stdout. The child gets its own process group, so everything it spawns
// (MCP servers, Bash commands) is stopped with it; Containment catches what
// leaves the group too.
type Command struct {
	Path string
	Args []string
	// Env is the child's whole environment; nil inherits this process's.
	Env []string
	Dir string
	// Stderr receives each line the child writes to stderr, without its
	// newline, one call at a time on a goroutine other than the caller's;
	// Close returns only after the last call. stderr is always drained (an
	// unread pipe would block the child). A line longer than 16 KiB
	// arrives in 16 KiB pieces.
	Stderr func(line string)
	// StderrTailSize is how many trailing stderr bytes errors quote
	// (default 4 KiB).
	StderrTailSize int
	// StdoutToStderr gives the child stderr's pipe for its stdout too, for
	// an agent whose stdout carries no protocol (a server that says where
	// it listens, then logs): its lines reach Stderr, and no reader waits
	// on them for the child's life. Read then reports only the end; the
	// Conn's Done says when the child has ended.
	StdoutToStderr bool
	// MaxLineSize caps one stdout line (default ndjson.DefaultMaxLineSize).
	MaxLineSize int
	// ExitGrace is how long Close waits for a clean exit after closing
	// stdin; TermGrace how long after SIGTERM before SIGKILL.
	ExitGrace time.Duration
	TermGrace time.Duration
	// EOFExitWait bounds how long Read waits, once stdout ends, for the
	// exit status (default 2 s). A child that closes stdout and lingers is
	// reported as a clean end; Close then stops it.
	EOFExitWait time.Duration
	Logger      *slog.Logger
	// Launcher, when set, forks the child from a thread shared with the
	// other Commands that use it, instead of one of the child's own, and
	// waits for its exit and stderr together with theirs (see Launcher):
	// for processes that run many agents at once.
	Launcher *Launcher
	// Containment is how the processes the agent starts are ended with it
	// (default ContainAuto: the strongest mode this process allows). A mode
	// asked for by name that is not available fails Connect with
	// ErrContainmentUnavailable.
	Containment Containment
	// ExtraFiles become the child's descriptors 3, 4, … (exec.Cmd's
	// ExtraFiles): for a sandbox that reads its own files from them.
	// They serve one start: Connect closes them once the child has them,
	// or has failed to start.
	ExtraFiles []*os.File
}

// Connect starts the process. ctx bounds the start only; the process lives
// until Close. When the process exits, whatever is left of its process group
// is killed at once (the exited leader is reaped only after that sweep, so
// the group id cannot have been reused by then), and so is what Containment
// caught outside the group.
func (c *Command) Connect(ctx context.Context) (Conn, error) {
	defer closeAll(c.ExtraFiles...)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conn, err := c.start(c.host())
	if err != nil {
		return nil, &StartError{Path: c.Path, Err: err}
	}
	return conn, nil
}

// start picks the containment and starts the process inside it.
func (c *Command) start(h host) (*commandConn, error) {
	f, why, err := h.choose(c.Containment)
	if err != nil {
		return nil, err
	}
	conn, err := c.startIn(f)
	if err != nil && f.mode == ContainCgroup && c.Containment == ContainAuto && !errors.Is(err, exec.ErrNotFound) {
		// The kernel would not start it in the cgroup (some seccomp
		// filters refuse clone3; a cgroup removed meanwhile reads as
		// ENOENT, like a missing binary): auto tries again without.
		f, why = h.withoutCgroup("starting in a cgroup failed: " + err.Error())
		conn, err = c.startIn(f)
	}
	if err != nil {
		return nil, err
	}
	c.noteContainment(f, why)
	return conn, nil
}

// startIn starts the process inside f, which it releases if that fails.
func (c *Command) startIn(f *fence) (*commandConn, error) {
	conn, err := c.startProcess(f)
	if err != nil {
		f.abandon()
		return nil, err
	}
	return conn, nil
}

func (c *Command) startProcess(f *fence) (*commandConn, error) {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env, cmd.Dir, cmd.ExtraFiles = c.Env, c.Dir, c.ExtraFiles
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	f.prepare(cmd)
	// Our own pipes, not exec's: Wait must never close stdout while
	// unread lines are still in it.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW)
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	if c.StdoutToStderr {
		cmd.Stdout = stderrW
	}
	tailSize := c.StderrTailSize
	if tailSize <= 0 {
		tailSize = 4 << 10
	}
	conn := &commandConn{
		cfg:       c,
		cmd:       cmd,
		stdin:     stdinW,
		stdout:    stdoutR,
		stderr:    stderrR,
		reader:    ndjson.NewReader(&growingPipe{f: stdoutR}, c.MaxLineSize),
		stdinW:    &countingWriter{w: stdinW},
		tail:      &tailBuffer{n: tailSize},
		writeSem:  make(chan struct{}, 1),
		fence:     f,
		exited:    make(chan struct{}),
		settled:   make(chan struct{}),
		stderrEOF: make(chan struct{}),
	}
	conn.writer = ndjson.NewWriter(conn.stdinW)
	if c.Stderr != nil {
		conn.lines = &stderrLines{emit: c.Stderr}
	}
	if l := c.Launcher; l != nil {
		err = conn.startShared(l)
	} else {
		started := make(chan error, 1)
		go conn.run(started)
		err = <-started
	}
	if err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW)
		return nil, err
	}
	closeAll(stdinR, stdoutW, stderrW)
	conn.watchStderr()
	return conn, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

type commandConn struct {
	cfg    *Command
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	stderr *os.File
	reader *ndjson.Reader
	writer *ndjson.Writer
	stdinW *countingWriter // counts what reached the pipe (under writeSem)
	tail   *tailBuffer
	lines  *stderrLines // nil without Command.Stderr

	// With a Launcher, its watcher reads stderr when there is something
	// to read (drainReady), under stderrMu; stderrTok is the watch and
	// stderrWatched says there is one.
	stderrMu      sync.Mutex
	stderrTok     int32
	stderrWatched bool
	stderrDone    bool           // stderrEOF is closed (under stderrMu)
	drains        sync.WaitGroup // drainReady goroutines

	fence     *fence
	exited    chan struct{} // closed once the group is swept and the leader reaped
	exitErr   error         // set before exited closes
	settled   chan struct{} // closed once what the fence killed is gone
	stderrEOF chan struct{}

	// sigMu orders signals to the group against the reap: while leaderGone
	// is false the leader is not reaped, so its pid still names our group.
	sigMu      sync.Mutex
	leaderGone bool

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool // set once Close has finished
	stdinOnce sync.Once

	readMu sync.Mutex
	endErr error // sticky result once stdout has ended (under readMu)

	writeSem  chan struct{} // one Write at a time; waiting honours ctx
	writeTorn bool          // a cancelled Write left part of a line (under writeSem)
}

// errWriteTorn is returned by Write once a cancelled Write has left part of a
// line in the pipe: anything written after it would be glued to that part.
var errWriteTorn = errors.New("transport: an earlier Write was cancelled mid-line; the agent's input is no longer framed")

// countingWriter counts the bytes that reach w.
type countingWriter struct {
	w io.Writer
	n int
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += n
	return n, err
}

func (c *commandConn) logger() *slog.Logger {
	if c.cfg.Logger != nil {
		return c.cfg.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// run starts the process and waits for it to end. Pdeathsig fires when the
// thread that forked the child exits, and the Go runtime ends a thread whose
// goroutine exits while locked to it: so the child is forked from a thread
// that stays locked until the child has exited, the Launcher's or its own.
func (c *commandConn) run(started chan<- error) {
	var release func()
	if l := c.cfg.Launcher; l != nil {
		var err error
		if release, err = l.start(c.cmd); err != nil {
			started <- err
			return
		}
		defer release() // after the reap below
	} else {
		runtime.LockOSThread()
		if err := c.cmd.Start(); err != nil {
			runtime.UnlockOSThread()
			started <- err
			return
		}
	}
	c.fence.started(c.cmd)
	started <- nil
	// Wait for the exit without reaping: the zombie leader keeps its pid,
	// and so the group id, from being reused while we sweep the group.
	waitErr := waitExited(c.cmd.Process.Pid)
	if release == nil {
		runtime.UnlockOSThread()
	}
	c.finish(waitErr)
}

// startShared starts the process from l's thread and has l's watcher
// wait for its exit: no goroutine of its own waits while it runs. Where
// the watcher cannot, a goroutine waits as without a Launcher.
func (c *commandConn) startShared(l *Launcher) error {
	release, err := l.start(c.cmd)
	if err != nil {
		return err
	}
	c.fence.started(c.cmd)
	finish := func(waitErr error) {
		defer release() // after the reap
		c.finish(waitErr)
	}
	if l.watch.watchExit(c.cmd.Process.Pid, func(err error) { go finish(err) }) != nil {
		go func() { finish(waitExited(c.cmd.Process.Pid)) }()
	}
	return nil
}

// finish reaps the exited leader, reports its exit and waits for what the
// fence killed to be gone.
func (c *commandConn) finish(waitErr error) {
	c.reap(waitErr)
	// The exit is reported already; Close waits for the rest to be gone.
	c.fence.settle(c.logger())
	close(c.settled)
}

// reap sweeps what is left of the exited leader's group and fence, reaps
// the leader and reports its exit.
func (c *commandConn) reap(waitErr error) {
	pid := c.cmd.Process.Pid
	if waitErr != nil {
		// No way to wait without reaping: reap, then stop signalling.
		err := c.cmd.Wait()
		c.sigMu.Lock()
		c.leaderGone, c.exitErr = true, err
		c.sigMu.Unlock()
		c.fence.kill(c.logger(), pid)
		close(c.exited)
		return
	}
	c.sigMu.Lock()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	c.fence.kill(c.logger(), pid)
	c.leaderGone = true
	c.exitErr = c.cmd.Wait() // the leader is a zombie: this does not block
	c.sigMu.Unlock()
	close(c.exited)
}

// signalGroup signals the child's process group unless the leader is gone.
func (c *commandConn) signalGroup(sig syscall.Signal) {
	c.sigMu.Lock()
	defer c.sigMu.Unlock()
	if !c.leaderGone {
		_ = syscall.Kill(-c.cmd.Process.Pid, sig)
	}
}

// watchStderr has the Launcher's watcher read stderr when there is
// something to read, or else a goroutine read it for the child's life.
func (c *commandConn) watchStderr() {
	if l := c.cfg.Launcher; l != nil {
		c.stderrMu.Lock() // a drain waits until the watch is noted
		defer c.stderrMu.Unlock()
		tok, err := l.watch.watchReadable(c.stderr, func() {
			c.drains.Add(1)
			go c.drainReady()
		})
		if err == nil {
			c.stderrTok, c.stderrWatched = tok, true
			return
		}
	}
	go c.drainStderr()
}

func (c *commandConn) drainStderr() {
	defer close(c.stderrEOF)
	buf := make([]byte, stderrReadSize)
	for {
		n, err := c.stderr.Read(buf)
		c.stderrRead(buf[:n])
		if err != nil {
			if c.lines != nil {
				c.lines.flush()
			}
			return
		}
	}
}

func (c *commandConn) stderrRead(p []byte) {
	if len(p) == 0 {
		return
	}
	_, _ = c.tail.Write(p)
	if c.lines != nil {
		c.lines.write(p)
	}
}

// drainReady reads what stderr has, without waiting, and has the watcher
// wait for more; at its end it ends the watch.
func (c *commandConn) drainReady() {
	defer c.drains.Done()
	c.stderrMu.Lock()
	defer c.stderrMu.Unlock()
	if c.stderrDone {
		return
	}
	raw, err := c.stderr.SyscallConn()
	if err != nil {
		c.endStderrLocked()
		return
	}
	buf := make([]byte, stderrReadSize)
	for {
		var n int
		var rerr error
		if err := raw.Control(func(fd uintptr) {
			for {
				n, rerr = unix.Read(int(fd), buf)
				if rerr != unix.EINTR {
					return
				}
			}
		}); err != nil {
			rerr = err
		}
		switch {
		case rerr == unix.EAGAIN:
			if c.cfg.Launcher.watch.rearm(c.stderrTok) != nil {
				c.endStderrLocked()
			}
			return
		case rerr != nil || n <= 0: // the end, or a read that failed
			c.endStderrLocked()
			return
		}
		c.stderrRead(buf[:n])
	}
}

// endStderrLocked ends a watched stderr: no more is read, the last line
// is passed on, stderrEOF closes. Call with stderrMu held.
func (c *commandConn) endStderrLocked() {
	if c.stderrDone {
		return
	}
	c.stderrDone = true
	c.cfg.Launcher.watch.unwatch(c.stderrTok)
	if c.lines != nil {
		c.lines.flush()
	}
	close(c.stderrEOF)
}

// stopStderr ends a watched stderr before its file is closed (a no-op
// otherwise), and waits for its drains.
func (c *commandConn) stopStderr() {
	if !c.stderrWatched {
		return
	}
	c.stderrMu.Lock()
	c.endStderrLocked()
	c.stderrMu.Unlock()
	c.drains.Wait()
}

// deadlineOnDone arranges for set(past) to run when ctx is done, which wakes
// a blocked read or write on the file. stop undoes it: it clears the
// deadline again if it was set, after the setter has finished, so a late
// setter cannot leave the deadline behind for the next call.
func deadlineOnDone(ctx context.Context, set func(time.Time) error) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	fired := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = set(time.Unix(1, 0))
	})
	return func() {
		if !stopAfter() {
			<-fired
			_ = set(time.Time{})
		}
	}
}

func (c *commandConn) Read(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if c.endErr != nil {
		return nil, c.endErr
	}
	// A line already buffered needs no read, and so no deadline: the
	// common case when the agent writes faster than it is read.
	line, err, ok := c.reader.Buffered()
	if !ok {
		// A read deadline in the past wakes the blocked read; the ndjson
		// reader keeps any partial line, so the next Read continues it.
		stop := deadlineOnDone(ctx, c.stdout.SetReadDeadline)
		line, err = c.reader.ReadLine()
		stop()
	}
	switch {
	case err == nil:
		return line, nil
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, io.EOF):
		end, err := c.endOfOutput(ctx)
		if err != nil {
			return nil, err // ctx ended first; the next Read waits again
		}
		c.endErr = end
		return nil, end
	case errors.Is(err, os.ErrClosed):
		return nil, ErrClosed
	}
	return nil, err
}

var _ Exiter = (*commandConn)(nil)

// Done is closed once the child has ended and been reaped.
func (c *commandConn) Done() <-chan struct{} { return c.exited }

// Err says how the child ended once Done is closed: nil for exit code 0,
// else an *ExitError; nil before.
func (c *commandConn) Err() error {
	select {
	case <-c.exited:
		return c.exitError()
	default:
		return nil
	}
}

// endOfOutput turns stdout EOF into io.EOF or the process's *ExitError. err
// is ctx's error if ctx ends while it waits for the exit status.
func (c *commandConn) endOfOutput(ctx context.Context) (end, err error) {
	wait := c.cfg.EOFExitWait
	if wait <= 0 {
		wait = 2 * time.Second
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-c.exited:
	case <-timer.C:
		c.logger().Warn("agent closed stdout but is still running")
		return io.EOF, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := c.exitError(); err != nil {
		return err, nil
	}
	return io.EOF, nil
}

// exitError describes the reaped process, or nil for exit code 0.
func (c *commandConn) exitError() error {
	var ee *exec.ExitError
	if !errors.As(c.exitErr, &ee) {
		return c.exitErr
	}
	// Let the stderr reader catch the last words before quoting them.
	select {
	case <-c.stderrEOF:
	case <-time.After(200 * time.Millisecond):
	}
	out := &ExitError{Code: ee.ExitCode(), StderrTail: strings.TrimSpace(c.tail.String())}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		out.Signal = unix.SignalName(ws.Signal())
	}
	return out
}

func (c *commandConn) Write(ctx context.Context, line []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.closed.Load() {
		return ErrClosed
	}
	// Queue here rather than on the ndjson writer's mutex: a waiting Write
	// must honour its own ctx without disturbing the one in progress.
	select {
	case c.writeSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.writeSem }()
	if c.writeTorn {
		return errWriteTorn
	}
	stop := deadlineOnDone(ctx, c.stdin.SetWriteDeadline)
	c.stdinW.n = 0
	err := c.writer.WriteLine(line)
	stop()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		if c.stdinW.n > 0 {
			c.writeTorn = true
		}
		return ctx.Err()
	case errors.Is(err, os.ErrClosed), errors.Is(err, syscall.EPIPE):
		return ErrClosed
	}
	return err
}

func (c *commandConn) CloseWrite() error {
	var err error
	c.stdinOnce.Do(func() { err = c.stdin.Close() })
	return err
}

// Close: close stdin, wait, SIGTERM the group, wait, SIGKILL the group, reap.
// Read keeps working while Close runs, so the last lines can be drained;
// once Close has returned, Read and Write return ErrClosed.
func (c *commandConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.shutdown()
		c.closed.Store(true)
	})
	return c.closeErr
}

func (c *commandConn) shutdown() error {
	_ = c.CloseWrite()
	exitGrace, termGrace := c.cfg.ExitGrace, c.cfg.TermGrace
	if exitGrace <= 0 {
		exitGrace = DefaultExitGrace
	}
	if termGrace <= 0 {
		termGrace = DefaultTermGrace
	}
	pid := c.cmd.Process.Pid
	if !c.waitExit(exitGrace) {
		c.logger().Debug("agent still running after stdin closed; sending SIGTERM", "pid", pid)
		c.signalGroup(syscall.SIGTERM)
		if !c.waitExit(termGrace) {
			c.logger().Warn("agent ignored SIGTERM; killing", "pid", pid)
			c.signalGroup(syscall.SIGKILL)
		}
	}
	// Once the leader has exited, run sweeps the rest of the group and
	// the fence (so nothing is orphaned), reaps the leader, and waits for
	// the rest to be gone.
	<-c.settled
	// Descendants that still hold stderr open died with the group; the
	// read end is closed either way so the drain goroutine returns.
	select {
	case <-c.stderrEOF:
	case <-time.After(time.Second):
	}
	c.stopStderr()
	closeAll(c.stdout, c.stderr)
	<-c.stderrEOF
	return nil
}

func (c *commandConn) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}
