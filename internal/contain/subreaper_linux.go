package contain

import (
	"errors"
	"fmt"
	"github.com/tetherhq/tether/internal/procstat"
	"os"
	"os/signal"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IsSubreaper reports whether this process is a child subreaper: whether
// orphaned descendants are reparented to it rather than to init.
func IsSubreaper() bool {
	var on int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0, 0, 0)
	return err == nil && on != 0
}

func setSubreaper(on bool) error {
	var v uintptr
	if on {
		v = 1
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, v, 0, 0, 0); err != nil {
		return fmt.Errorf("contain: prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}

// Reaper makes this process a child subreaper and reaps the zombies of the
// orphans it adopts, on every SIGCHLD.
type Reaper struct {
	sigs    chan os.Signal
	quit    chan struct{}
	stopped chan struct{}
}

// StartReaper makes this process a child subreaper and starts reaping.
// Orphans become this process's children, and their exit statuses are
// nobody's: ReapOrphans takes them, and only them, which is safe because
// os.StartProcess holds a pidfd for each child it starts until it has
// waited for it. A process that forks children in another way (a raw
// syscall.ForkExec and wait4) must not start a Reaper. It fails where
// pidfds do not work (Linux before 5.4), since Go then waits without them.
func StartReaper() (*Reaper, error) {
	if err := pidfdsWork(); err != nil {
		return nil, err
	}
	r := &Reaper{sigs: make(chan os.Signal, 1), quit: make(chan struct{}), stopped: make(chan struct{})}
	signal.Notify(r.sigs, syscall.SIGCHLD)
	if err := setSubreaper(true); err != nil {
		signal.Stop(r.sigs)
		return nil, err
	}
	go r.loop()
	return r, nil
}

func (r *Reaper) loop() {
	defer close(r.stopped)
	for {
		ReapOrphans()
		select {
		case <-r.sigs:
		case <-r.quit:
			return
		}
	}
}

// Stop ends subreaping: orphans go to init again. Those already adopted
// stay this process's children; their zombies are reaped one last time.
func (r *Reaper) Stop() {
	_ = setSubreaper(false)
	signal.Stop(r.sigs)
	close(r.quit)
	<-r.stopped
	ReapOrphans()
}

// pidfdsWork checks what os.StartProcess checks before it gives each child
// a pidfd: pidfd_open, waitid on a pidfd, pidfd_send_signal.
func pidfdsWork() error {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("%w: pidfd_open: %v", ErrUnsupported, err)
	}
	defer unix.Close(fd)
	var info unix.Siginfo
	err = ignoringEINTR(func() error { return unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil) })
	if !errors.Is(err, unix.ECHILD) {
		return fmt.Errorf("%w: waitid(P_PIDFD): %v", ErrUnsupported, err)
	}
	if err := unix.PidfdSendSignal(fd, 0, nil, 0); err != nil {
		return fmt.Errorf("%w: pidfd_send_signal: %v", ErrUnsupported, err)
	}
	return nil
}

// ReapOrphans reaps this process's zombie children that no pidfd in this
// process names: adopted orphans, whose statuses nobody waits for. A
// child started by os.StartProcess (os/exec) is never taken: its pidfd
// stays open until its own Wait. Each zombie is pinned by a pidfd of our
// own before the check, so a pid reused meanwhile is never reaped.
func ReapOrphans() {
	if !anyExitedChild() {
		return // the common case: os/exec reaped its child already
	}
	type zombie struct{ pid, fd int }
	var zombies []zombie
	mine := map[int]bool{}
	defer func() {
		for _, z := range zombies {
			_ = unix.Close(z.fd)
		}
	}()
	for _, pid := range procstat.NewChildLister()(os.Getpid()) {
		st, err := procstat.Read(pid)
		if err != nil || st.State != 'Z' {
			continue
		}
		fd, ok := pin(pid, st)
		if !ok {
			continue
		}
		if !exitedChild(fd) { // reaped and reused meanwhile
			_ = unix.Close(fd)
			continue
		}
		zombies = append(zombies, zombie{pid, fd})
		mine[fd] = true
	}
	if len(zombies) == 0 {
		return
	}
	held, err := heldPidfds(mine)
	if err != nil {
		return // cannot tell whose they are: leave them
	}
	for _, z := range zombies {
		if !held[z.pid] {
			reapChild(z.fd)
		}
	}
}

// anyExitedChild reports, without reaping, whether some child of this
// process has exited and not been reaped.
func anyExitedChild() bool {
	var info unix.Siginfo
	err := ignoringEINTR(func() error {
		return unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
	})
	return err == nil && info.Signo != 0
}
