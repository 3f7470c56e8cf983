package contain

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Delegated returns the directory of this process's cgroup v2 when this
// process may create cgroups in it and start processes in those: the
// directory is writable, and so is its cgroup.procs (moving a process
// between cgroups needs write access to their common ancestor's). The
// error, matching ErrNoCgroup, says why not.
func Delegated() (string, error) {
	rel, err := ownCgroupPath()
	if err != nil {
		return "", err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	dir, ok := cgroupDir(mounts, rel)
	if !ok {
		return "", fmt.Errorf("%w: no cgroup2 mount shows this process's cgroup %s", ErrNoCgroup, rel)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return "", fmt.Errorf("%w: cgroup %s: %v", ErrNoCgroup, dir, err)
	}
	if err := unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK); err != nil {
		return "", fmt.Errorf("%w: cgroup %s: cgroup.procs: %v", ErrNoCgroup, dir, err)
	}
	return dir, nil
}

// ownCgroupPath is this process's cgroup v2 path ("0::/path" in
// /proc/self/cgroup; a cgroup v1-only system has no such line).
func ownCgroupPath() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			if strings.HasSuffix(rel, " (deleted)") {
				return "", fmt.Errorf("%w: this process's cgroup %s was removed", ErrNoCgroup, rel)
			}
			return rel, nil
		}
	}
	return "", fmt.Errorf("%w: this process is in no cgroup v2 hierarchy", ErrNoCgroup)
}

// cgroupDir finds where a cgroup2 mount in mountinfo shows the cgroup at
// path rel: /sys/fs/cgroup on a unified system, /sys/fs/cgroup/unified on
// a hybrid one. A mount may show only part of the tree (its root field).
// Only cgroup2 lines are split into fields: this runs at every agent start.
func cgroupDir(mountinfo []byte, rel string) (string, bool) {
	for len(mountinfo) > 0 {
		var line []byte
		line, mountinfo, _ = bytes.Cut(mountinfo, []byte{'\n'})
		// id parent major:minor root mountpoint options [optional…] - fstype source superopts
		if !bytes.Contains(line, []byte(" - cgroup2 ")) {
			continue
		}
		fields := strings.Fields(string(line))
		if len(fields) < 5 {
			continue
		}
		root, point := unescapeMount(fields[3]), unescapeMount(fields[4])
		under, ok := strings.CutPrefix(rel, root)
		if !ok || (root != "/" && under != "" && !strings.HasPrefix(under, "/")) {
			continue
		}
		return filepath.Join(point, under), true
	}
	return "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, …).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Cgroup is one agent's cgroup v2, a child of this process's own.
type Cgroup struct {
	// Dir is its directory.
	Dir string
	fd  int // Dir, open until the agent has been started in it; else -1
}

// NewCgroup creates a cgroup under parent (see Delegated) named after this
// process. The caller starts the agent in it with CLONE_INTO_CGROUP
// (syscall.SysProcAttr.UseCgroupFD with FD), calls CloseFD once started,
// and Kill and Remove when the agent is done.
func NewCgroup(parent string) (*Cgroup, error) {
	dir := filepath.Join(parent, "tether-"+strconv.Itoa(os.Getpid())+"-"+randomHex(6))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	// cgroup.kill arrived in Linux 5.14; without it there is no way to end
	// a cgroup's processes at once, whatever they do meanwhile.
	if err := unix.Access(filepath.Join(dir, "cgroup.kill"), unix.W_OK); err != nil {
		_ = unix.Rmdir(dir)
		return nil, fmt.Errorf("%w: %s has no cgroup.kill (Linux 5.14 or later): %v", ErrNoCgroup, dir, err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return nil, fmt.Errorf("%w: open %s: %v", ErrNoCgroup, dir, err)
	}
	return &Cgroup{Dir: dir, fd: fd}, nil
}

// FD is the cgroup's directory descriptor for CLONE_INTO_CGROUP.
func (g *Cgroup) FD() int { return g.fd }

// CloseFD releases the directory descriptor (the agent has started).
func (g *Cgroup) CloseFD() {
	if g.fd >= 0 {
		_ = unix.Close(g.fd)
		g.fd = -1
	}
}

// Kill sends SIGKILL to every process in the cgroup and its descendants,
// including those forked while the kill is under way.
func (g *Cgroup) Kill() error {
	f, err := os.OpenFile(filepath.Join(g.Dir, "cgroup.kill"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("1")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Remove waits up to timeout for the cgroup to hold no process, then
// removes it and any cgroups the agent made inside it. A killed process
// leaves in milliseconds unless it is stuck in the kernel (a hung mount).
func (g *Cgroup) Remove(timeout time.Duration) error {
	g.CloseFD()
	err := unix.Rmdir(g.Dir)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("contain: remove cgroup %s: %w", g.Dir, err)
	}
	// Processes still leaving, or cgroups the agent made inside.
	if err := g.waitEmpty(timeout); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return removeTree(g.Dir)
}

// waitEmpty waits for "populated 0" in cgroup.events. The kernel wakes a
// poll on that file when it changes; the poll is also cut into short
// slices, so a missed wake-up costs a little time, not the timeout.
func (g *Cgroup) waitEmpty(timeout time.Duration) error {
	f, err := os.Open(filepath.Join(g.Dir, "cgroup.events"))
	if err != nil {
		return err
	}
	defer f.Close()
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 256)
	for {
		n, err := f.ReadAt(buf, 0)
		if n == 0 && err != nil {
			return err
		}
		if bytes.Contains(buf[:n], []byte("populated 0")) {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("contain: cgroup %s still holds processes after %v", g.Dir, timeout)
		}
		slice := min(left, 50*time.Millisecond)
		var pollErr error
		if err := raw.Control(func(fd uintptr) {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
			_, pollErr = unix.Poll(fds, int(slice.Milliseconds())+1)
		}); err != nil {
			return err
		}
		if pollErr != nil && !errors.Is(pollErr, unix.EINTR) {
			return pollErr
		}
	}
}

// RemoveStale removes the empty agent cgroups under parent that processes
// no longer running made (NewCgroup names them after their maker): those
// of a tether that was killed before it could remove them. Only cgroups
// older than minAge are touched, so one made a moment ago by a process
// this one cannot see (another pid namespace) is never taken from under
// it. A cgroup that still holds processes is left alone: rmdir refuses it.
// It returns how many it removed.
func RemoveStale(parent string, minAge time.Duration) int {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		pid, ok := makerPid(e.Name())
		if !ok || !e.IsDir() || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			continue // its maker (or a process with its pid) runs
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < minAge {
			continue
		}
		if unix.Rmdir(filepath.Join(parent, e.Name())) == nil {
			removed++
		}
	}
	return removed
}

// makerPid reads the pid in a name NewCgroup made: tether-<pid>-<12 hex>.
func makerPid(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "tether-")
	if !ok {
		return 0, false
	}
	num, suffix, ok := strings.Cut(rest, "-")
	if !ok || len(suffix) != 12 || strings.Trim(suffix, "0123456789abcdef") != "" {
		return 0, false
	}
	pid, err := strconv.Atoi(num)
	return pid, err == nil && pid > 0
}

// removeTree removes an empty cgroup and the cgroups below it, deepest
// first (rmdir takes a cgroup with no process and no child cgroup).
func removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("contain: remove cgroup %s: %w", dir, err)
	}
	return nil
}
