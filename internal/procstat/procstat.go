// Package procstat reads what Linux's /proc says of a process: its stat
// line (parent, state, start time, CPU time, resident memory) and its
// children. It reads; it never signals what it reads about.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc's times: 100 on Linux.
const clockTicks = 100

// Stat is what /proc/PID/stat says that the project uses.
type Stat struct {
	// State is R (running), S or D (sleeping; D uninterruptibly, as in
	// the middle of an exec or a disk read), T or t (stopped), I (idle),
	// W, P, K (older kernels' extra states), or Z and X once it has exited.
	State byte
	PPID  int
	// Start is when the process started, in clock ticks since boot: with
	// the pid it names one process, so a reused pid is told apart.
	Start uint64
	// CPU is its user and system time, with its reaped children's.
	CPU time.Duration
	// RSS is its resident memory in bytes.
	RSS int64
}

// Exited says whether the process has ended: a zombie (Z) waiting to be
// reaped, or dead (X, x). Every other state, D and T included, is a
// process that is still there.
func (s Stat) Exited() bool { return s.State == 'Z' || s.State == 'X' || s.State == 'x' }

// Read reads pid's stat line.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	st, ok := parse(b)
	if !ok {
		return Stat{}, fmt.Errorf("procstat: malformed /proc/%d/stat", pid)
	}
	return st, nil
}

// parse reads a stat line. The command name (field 2) may hold spaces and
// parentheses: the fields after it start after its last ')'.
func parse(b []byte) (Stat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return Stat{}, false
	}
	f := strings.Fields(string(b[i+2:]))
	// f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17,
	// starttime 22, rss 24.
	field := func(n int) int { return n - 3 }
	if len(f) <= field(24) || len(f[0]) != 1 {
		return Stat{}, false
	}
	nums := make([]int64, 0, 6)
	for _, n := range []int{4, 14, 15, 16, 17, 24} {
		v, err := strconv.ParseInt(f[field(n)], 10, 64)
		if err != nil {
			return Stat{}, false
		}
		nums = append(nums, v)
	}
	start, err := strconv.ParseUint(f[field(22)], 10, 64)
	if err != nil {
		return Stat{}, false
	}
	ticks := nums[1] + nums[2] + nums[3] + nums[4]
	return Stat{State: f[0][0], PPID: int(nums[0]), Start: start,
		CPU: time.Duration(ticks) * time.Second / clockTicks, RSS: nums[5] * int64(os.Getpagesize())}, true
}

// ChildLister lists the child processes of a pid.
type ChildLister func(pid int) []int

// NewChildLister reads the kernel's per-thread children lists, or, on a
// kernel built without them (CONFIG_PROC_CHILDREN), a snapshot of every
// process's parent, taken now.
func NewChildLister() ChildLister {
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
		if st, err := Read(pid); err == nil {
			byParent[st.PPID] = append(byParent[st.PPID], pid)
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
