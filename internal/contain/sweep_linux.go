package contain

import (
	"errors"
	"fmt"
	"github.com/tetherhq/tether/internal/procstat"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// maxSweepRounds bounds how often KillMarked looks again for processes
// forked while it was stopping the others (a fork bomb never settles).
const maxSweepRounds = 64

// Sweep is what KillMarked killed, held by pidfds until Settle.
type Sweep struct {
	fds []int
}

// Len is how many processes the sweep killed.
func (s *Sweep) Len() int { return len(s.fds) }

// KillMarked kills what an exited agent left among this process's
// children: each child whose environment holds MarkerVar=marker (except
// leader, the agent itself, exited but not reaped), and every descendant
// of those, marked or not. In a child subreaper these are all the agent's
// surviving descendants, except those that dropped the marker from their
// environment and then lost their parent.
//
// They are stopped first (SIGSTOP), so none can fork after it has been
// looked at, and looked for again until no new one turns up; then all are
// killed. Each is held by a pidfd, so a pid reused meanwhile is never
// signalled. Settle waits for them and reaps those that are ours.
func KillMarked(marker string, leader int) *Sweep {
	kv := MarkerVar + "=" + marker
	s := &Sweep{}
	pinned := map[int]bool{}
	self := os.Getpid()
	take := func(pid int, marked bool) bool {
		if pinned[pid] || pid == leader {
			return false
		}
		st, err := procstat.Read(pid)
		if err != nil || st.Exited() {
			return false
		}
		fd, ok := pin(pid, st)
		if !ok {
			return false
		}
		// Read after pinning: the environment is that process's.
		if marked && !hasEnv(pid, kv) {
			_ = unix.Close(fd)
			return false
		}
		_ = unix.PidfdSendSignal(fd, unix.SIGSTOP, nil, 0)
		pinned[pid] = true
		s.fds = append(s.fds, fd)
		return true
	}
	for range maxSweepRounds {
		list := procstat.NewChildLister()
		grew := false
		for _, pid := range list(self) {
			grew = take(pid, true) || grew
		}
		// Children of the stopped ones, which a round may have added to.
		for queue := keys(pinned); len(queue) > 0; {
			pid := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, c := range list(pid) {
				if take(c, false) {
					grew = true
					queue = append(queue, c)
				}
			}
		}
		if !grew {
			break
		}
	}
	for _, fd := range s.fds {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
	return s
}

func keys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Settle waits up to timeout for every killed process to have exited, then
// reaps those that ended as zombies of this process (a killed process's
// zombie children come to the subreaper once it has exited), and releases
// the pidfds.
func (s *Sweep) Settle(timeout time.Duration) error {
	defer func() {
		for _, fd := range s.fds {
			_ = unix.Close(fd)
		}
		s.fds = nil
	}()
	err := waitAllExited(s.fds, timeout)
	for _, fd := range s.fds {
		reapChild(fd)
	}
	return err
}

// waitAllExited polls pidfds, which become readable when their process
// exits, until all have.
func waitAllExited(fds []int, timeout time.Duration) error {
	pending := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		pending[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	deadline := time.Now().Add(timeout)
	for len(pending) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("contain: %d killed processes still running after %v", len(pending), timeout)
		}
		_, err := unix.Poll(pending, int(left.Milliseconds())+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		kept := pending[:0]
		for _, p := range pending {
			if p.Revents == 0 {
				p.Revents = 0
				kept = append(kept, p)
			}
		}
		pending = kept
	}
	return nil
}
