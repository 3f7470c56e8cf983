package contain

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// procStat is what /proc/PID/stat says that matters here.
type procStat struct {
	state byte // R, S, D, T, Z, …
	ppid  int
	// start is when the process started, in clock ticks since boot: with
	// the pid it names one process, so a reused pid is told apart.
	start uint64
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return procStat{}, fmt.Errorf("contain: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+2:]))
	const startField = 22 - 3 // field 22 (starttime), counted from field 3
	if len(f) <= startField || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("contain: malformed /proc/%d/stat", pid)
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[startField], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, fmt.Errorf("contain: malformed /proc/%d/stat", pid)
	}
	return procStat{state: f[0][0], ppid: ppid, start: start}, nil
}

// childLister lists the child processes of a pid.
type childLister func(pid int) []int

// newChildLister reads the kernel's per-thread children lists, or, on a
// kernel built without them (CONFIG_PROC_CHILDREN), a snapshot of every
// process's parent.
func newChildLister() childLister {
	self := os.Getpid()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", self, self)); err == nil {
		return childrenFromFiles
	}
	byParent := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil {
			byParent[st.ppid] = append(byParent[st.ppid], pid)
		}
	}
	return func(pid int) []int { return byParent[pid] }
}

// childrenFromFiles reads pid's children from each of its threads' lists:
// an adopted orphan may hang off any thread of a subreaper.
func childrenFromFiles(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue // the thread ended
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

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
func pin(pid int, st procStat) (fd int, ok bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, false
	}
	if now, err := readStat(pid); err != nil || now.start != st.start {
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
