package contain

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/tetherhq/tether/internal/procstat"
	"golang.org/x/sys/unix"
)

// hasEnv reports whether pid's environment holds the entry kv ("K=V"). A
// zombie's, or another user's, environment cannot be read: false.
func hasEnv(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for entry := range bytes.SplitSeq(b, []byte{0}) {
		if string(entry) == kv {
			return true
		}
	}
	return false
}

// pin opens a pidfd for pid and checks that it names the process seen
// with st, not a later one that reused the pid. The caller closes fd.
func pin(pid int, st procstat.Stat) (fd int, ok bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, false
	}
	if now, err := procstat.Read(pid); err != nil || now.Start != st.Start {
		_ = unix.Close(fd)
		return -1, false
	}
	return fd, true
}

// heldPidfds returns the pids that pidfds open in this process refer to,
// except the descriptors in skip. os.StartProcess holds a pidfd for each
// child until it has waited for it: a zombie child that no pidfd names is
// one nobody waits for.
func heldPidfds(skip map[int]bool) (map[int]bool, error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	held := map[int]bool{}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || skip[fd] {
			continue
		}
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // closed meanwhile (or the directory's own descriptor)
		}
		// "anon_inode:[pidfd]" until Linux 6.9, "pidfd:[inode]" since.
		if target != "anon_inode:[pidfd]" && !strings.HasPrefix(target, "pidfd:") {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if pid, ok := fdinfoPid(info); ok {
			held[pid] = true
		}
	}
	return held, nil
}

// fdinfoPid reads the "Pid:" line of a pidfd's fdinfo.
func fdinfoPid(info []byte) (int, bool) {
	for line := range strings.SplitSeq(string(info), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || pid <= 0 { // -1 once reaped
				return 0, false
			}
			return pid, true
		}
	}
	return 0, false
}

// exitedChild reports whether the process behind fd is a child of this
// process that has exited and not been reaped, without reaping it.
func exitedChild(fd int) bool {
	var info unix.Siginfo
	err := ignoringEINTR(func() error {
		return unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
	})
	return err == nil && info.Signo != 0
}

// reapChild reaps the process behind fd if it is an exited child of this
// process; otherwise (not ours, still running, already reaped) it does
// nothing.
func reapChild(fd int) {
	var info unix.Siginfo
	_ = ignoringEINTR(func() error {
		return unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil)
	})
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
