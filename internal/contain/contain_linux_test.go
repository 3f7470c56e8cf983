package contain

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/tetherhq/tether/internal/procstat"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// hangGuard bounds every wait; nothing asserts that anything is fast.
const hangGuard = 30 * time.Second

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func state(pid int) byte {
	st, err := procstat.Read(pid)
	if err != nil {
		return 0 // gone
	}
	return st.State
}

// Where the cgroup2 mount shows a process's cgroup: hybrid and unified
// layouts, a mount of part of the tree, escaped mount points, no mount.
func TestCgroupDir(t *testing.T) {
	const hybrid = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	const unified = `25 20 0:22 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate
`
	const partial = `25 20 0:22 /user.slice /mnt/my\040cgroups rw - cgroup2 cgroup2 rw
`
	for _, tc := range []struct {
		mountinfo, rel, want string
	}{
		{hybrid, "/", "/sys/fs/cgroup/unified"},
		{unified, "/system.slice/tether.service", "/sys/fs/cgroup/system.slice/tether.service"},
		{partial, "/user.slice/user-1000.slice", "/mnt/my cgroups/user-1000.slice"},
		{partial, "/user.slicer", ""}, // not below the mount's root
		{partial, "/system.slice", ""},
		{"34 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", "/", ""},
	} {
		got, ok := cgroupDir([]byte(tc.mountinfo), tc.rel)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("cgroupDir(%q) = %q, %v; want %q", tc.rel, got, ok, tc.want)
		}
	}
}

func TestFdinfoPid(t *testing.T) {
	for _, tc := range []struct {
		info string
		pid  int
		ok   bool
	}{
		{"pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1053\nPid:\t4242\nNSpid:\t4242\n", 4242, true},
		{"pos:\t0\nPid:\t-1\n", 0, false}, // reaped
		{"pos:\t0\nflags:\t02\n", 0, false},
	} {
		pid, ok := fdinfoPid([]byte(tc.info))
		if pid != tc.pid || ok != tc.ok {
			t.Errorf("fdinfoPid(%q) = %d, %v", tc.info, pid, ok)
		}
	}
}

// A command name with spaces and parentheses does not shift the fields,
// and a child is read as alive in whatever state a live process may be
// in. Its binary is a copy just dropped from the page cache, so its exec
// reads it from disk, as under heavy load: read at once, the child is
// often mid-exec, in D (an uninterruptible wait) with its name still
// ours; read once its exec is done, it has the odd name.
func TestReadStat(t *testing.T) {
	odd := filepath.Join(t.TempDir(), "a) b (c")
	coldCopy(t, "/bin/sleep", odd)
	cmd := exec.Command(odd, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	self, _ := procstat.Read(os.Getpid())
	check := func(when string) {
		t.Helper()
		st, err := procstat.Read(pid)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if st.PPID != os.Getpid() || st.Start < self.Start || st.Exited() || st.State < 'A' || st.State > 'z' || st.CPU < 0 || st.RSS < 0 {
			t.Errorf("%s: stat = %+v (ours %+v)", when, st, self)
		}
	}
	check("right after Start")
	waitFor(t, "the child's exec", func() bool {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return err == nil && string(comm) == filepath.Base(odd)+"\n"
	})
	check("after its exec")
}

// coldCopy copies an executable and drops the copy from the page cache.
func coldCopy(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	// Advice only: where it is not taken, the exec is merely quicker.
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// ReapOrphans never takes the status of a child os/exec started: that
// child stays a zombie until its own Wait, which reports its real exit.
func TestReapOrphansLeavesExecChildren(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exit 7")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	waitFor(t, "the child to exit", func() bool { return state(pid) == 'Z' })
	ReapOrphans()
	if s := state(pid); s != 'Z' {
		t.Fatalf("after ReapOrphans the child is in state %q, want still a zombie", s)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("Wait = %v, want exit status 7", err)
	}
}

// A Reaper makes this process a subreaper: an orphan comes to it, and its
// zombie is reaped once it exits. Stop undoes both.
func TestReaperReapsAdoptedOrphans(t *testing.T) {
	r, err := StartReaper()
	if err != nil {
		t.Skipf("cannot be a subreaper here: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			r.Stop()
		}
	}()
	if !IsSubreaper() {
		t.Fatal("IsSubreaper false after StartReaper")
	}
	gate := filepath.Join(t.TempDir(), "go")
	// The shell exits at once; its background child waits for the gate.
	out, err := exec.Command("/bin/sh", "-c", `(while [ ! -e "$1" ]; do sleep 0.01; done) >/dev/null 2>&1 & echo $!`, "sh", gate).Output()
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := procstat.Read(orphan); err != nil || st.PPID != os.Getpid() {
		t.Fatalf("orphan %d: %+v, %v; want it adopted by us (%d)", orphan, st, err, os.Getpid())
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the orphan's zombie to be reaped", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", orphan))
		return errors.Is(err, os.ErrNotExist)
	})
	r.Stop()
	stopped = true
	if IsSubreaper() {
		t.Error("still a subreaper after Stop")
	}
}

// KillMarked ends this process's marked children and all below them, and
// nothing else: not the leader, not another marker's, not unmarked ones.
func TestKillMarked(t *testing.T) {
	r, err := StartReaper()
	if err != nil {
		t.Skipf("cannot be a subreaper here: %v", err)
	}
	defer r.Stop()
	mine, theirs := NewMarker(), NewMarker()
	dir := t.TempDir()
	// Each shell leaves behind a shell in a session of its own, which runs
	// a sleep with a clean environment; that shell writes both pids.
	start := func(marker string) (leader *exec.Cmd, left []int) {
		pidFile := filepath.Join(dir, "pids-"+marker)
		cmd := exec.Command("/bin/sh", "-c", `setsid sh -c 'env -i /bin/sleep 60 & echo $$ $! > "$1.tmp"; mv "$1.tmp" "$1"; wait' sh "$1" & wait`, "sh", pidFile)
		if marker != "" {
			cmd.Env = append(os.Environ(), MarkerVar+"="+marker)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		var b []byte
		waitFor(t, "the pids", func() bool {
			b, _ = os.ReadFile(pidFile)
			return len(b) > 0
		})
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			left = append(left, pid)
		}
		return cmd, left
	}
	leader, mineLeft := start(mine)
	other, theirsLeft := start(theirs)
	unmarked, unmarkedLeft := start("")
	// The leaders exit (killed); what they left comes to us.
	for _, c := range []*exec.Cmd{leader, other, unmarked} {
		if err := c.Process.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	for _, left := range [][]int{mineLeft, theirsLeft, unmarkedLeft} {
		waitFor(t, "the orphans to be adopted", func() bool {
			st, err := procstat.Read(left[0])
			return err == nil && st.PPID == os.Getpid()
		})
	}
	s := KillMarked(mine, leader.Process.Pid)
	if s.Len() != 2 {
		t.Errorf("killed %d processes, want 2 (the marked orphan and its child)", s.Len())
	}
	if err := s.Settle(hangGuard); err != nil {
		t.Fatal(err)
	}
	for _, pid := range mineLeft {
		if st := state(pid); st != 0 {
			t.Errorf("pid %d of the killed agent in state %q, want gone and reaped", pid, st)
		}
	}
	if st := state(leader.Process.Pid); st != 'Z' {
		t.Errorf("the leader is in state %q, want a zombie left for its own Wait", st)
	}
	for _, pid := range append(theirsLeft, unmarkedLeft...) {
		if st := state(pid); st == 0 || st == 'Z' {
			t.Errorf("pid %d of another agent is gone", pid)
		}
	}
	for _, pid := range append(theirsLeft, unmarkedLeft...) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// A cgroup made for an agent: the agent starts in it, makes a cgroup of
// its own inside and leaves a process there; Kill ends everything and
// Remove removes both cgroups.
func TestCgroupKillAndRemove(t *testing.T) {
	parent, err := Delegated()
	if err != nil {
		t.Skipf("no delegated cgroup here: %v", err)
	}
	g, err := NewCgroup(parent)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `mkdir "$1/inner" && setsid sh -c 'echo $$ > "$1/inner/cgroup.procs"; exec sleep 60' sh "$1" & wait`, "sh", g.Dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g.CloseFD()
	waitFor(t, "the inner cgroup to be populated", func() bool {
		b, _ := os.ReadFile(filepath.Join(g.Dir, "inner", "cgroup.procs"))
		return len(bytes.TrimSpace(b)) > 0
	})
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("Wait = %v, want killed", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("the agent outlived cgroup.kill")
	}
	if err := g.Remove(hangGuard); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there: %v", g.Dir, err)
	}
}

// RemoveStale removes the empty cgroups of makers that are gone, once old
// enough, and nothing else: not this process's, not a running maker's, not
// one that holds processes, not another name.
func TestRemoveStale(t *testing.T) {
	parent, err := Delegated()
	if err != nil {
		t.Skipf("no delegated cgroup here: %v", err)
	}
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Rmdir(dir) })
		return dir
	}
	suffix := func() string { return randomHex(6) }
	stale := mk(fmt.Sprintf("tether-%d-%s", gone.Process.Pid, suffix()))
	kept := []string{
		mk(fmt.Sprintf("tether-%d-%s", os.Getpid(), suffix())),
		mk(fmt.Sprintf("tether-%d-%s", os.Getppid(), suffix())),
		mk(fmt.Sprintf("tether-%d-%s-x", gone.Process.Pid, suffix())),
		mk("tether-test-" + suffix()),
	}
	busy := mk(fmt.Sprintf("tether-%d-%s", gone.Process.Pid, suffix()))
	kept = append(kept, busy)
	f, err := os.Open(busy)
	if err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("/bin/sleep", "60")
	sleeper.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
	err = sleeper.Start()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })

	RemoveStale(parent, time.Hour)
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("a stale cgroup younger than the minimum age was removed")
	}
	// Stale cgroups other runs left on this machine may go too.
	if n := RemoveStale(parent, 0); n < 1 {
		t.Errorf("removed %d cgroups, want at least 1", n)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale cgroup %s still there", stale)
	}
	for _, dir := range kept {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed", dir)
		}
	}
}
