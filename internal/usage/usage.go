// Package usage measures what a process tree and a directory use, from
// Linux's /proc and the file system: the CPU and memory of a process and
// every process below it (the agents a shim runs, and their commands), and
// the disk a directory takes. It reads; it never signals or changes what it
// measures.
package usage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on Linux.
const clockTicks = 100

// Tree samples the process tree rooted at one pid.
type Tree struct {
	root int
	now  func() time.Time

	mu       sync.Mutex
	lastCPU  time.Duration
	lastTime time.Time
}

// NewTree measures the tree under root (os.Getpid() for "this process and
// what it runs") from now on: the first sample's CPU share is over the
// time since NewTree. now nil means time.Now.
func NewTree(root int, now func() time.Time) *Tree {
	if now == nil {
		now = time.Now
	}
	t := &Tree{root: root, now: now}
	t.lastCPU, _ = t.cpu() // a tree not there yet starts from nothing
	t.lastTime = now()
	return t
}

// cpu is the tree's CPU time so far.
func (t *Tree) cpu() (time.Duration, error) {
	procs, err := t.read()
	if err != nil {
		return 0, err
	}
	var cpu time.Duration
	for _, p := range descendants(procs, t.root) {
		cpu += p.cpu
	}
	return cpu, nil
}

// Sample is a tree's use at one moment.
type Sample struct {
	// CPUPercent is the tree's CPU time since the previous sample (the
	// first: since NewTree) over the wall time between: 100 is one core
	// kept busy.
	CPUPercent float64
	// RSSBytes is the resident memory of its live processes, summed.
	RSSBytes int64
	// Processes is how many live processes it has, root included.
	Processes int
}

// Sample reads the tree now.
func (t *Tree) Sample() (Sample, error) {
	procs, err := t.read()
	if err != nil {
		return Sample{}, err
	}
	var cpu time.Duration
	var rss int64
	n := 0
	for _, p := range descendants(procs, t.root) {
		cpu += p.cpu
		rss += p.rss
		n++
	}
	if n == 0 {
		return Sample{}, fmt.Errorf("usage: process %d: %w", t.root, os.ErrNotExist)
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Sample{RSSBytes: rss, Processes: n}
	if wall := now.Sub(t.lastTime); wall > 0 && cpu >= t.lastCPU {
		s.CPUPercent = 100 * float64(cpu-t.lastCPU) / float64(wall)
	}
	t.lastCPU, t.lastTime = cpu, now
	return s, nil
}

// proc is one process's line of /proc/PID/stat, as far as a tree needs.
type proc struct {
	pid, ppid int
	cpu       time.Duration // its own and its reaped children's
	rss       int64
}

// read parses every process's stat; processes that end meanwhile are
// passed over.
func (t *Tree) read() (map[int]proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	out := make(map[int]proc, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		if p, ok := parseStat(pid, string(data)); ok {
			out[pid] = p
		}
	}
	return out, nil
}

// parseStat reads ppid, utime, stime, cutime, cstime and rss from a stat
// line. The command name, in parentheses, may hold spaces and parentheses
// itself: the fields start after its last ')'.
func parseStat(pid int, line string) (proc, bool) {
	end := strings.LastIndexByte(line, ')')
	if end < 0 {
		return proc{}, false
	}
	f := strings.Fields(line[end+1:])
	// f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17, rss 24.
	if len(f) < 22 {
		return proc{}, false
	}
	num := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	ticks := num(11) + num(12) + num(13) + num(14)
	return proc{pid: pid, ppid: int(num(1)),
		cpu: time.Duration(ticks) * time.Second / clockTicks,
		rss: num(21) * int64(os.Getpagesize())}, true
}

// descendants are root and every process below it.
func descendants(procs map[int]proc, root int) []proc {
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		p, ok := procs[pid]
		if !ok {
			continue
		}
		out = append(out, p)
		queue = append(queue, children[pid]...)
	}
	return out
}

// DirBytes is the disk dir takes: the blocks of every file below it,
// symlinks not followed, each inode counted once. It stops with ctx's
// error, returning what it counted so far.
func DirBytes(ctx context.Context, dir string) (int64, error) {
	var total int64
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil // changed under the walk, or not ours to read
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			id := inode{uint64(st.Dev), st.Ino}
			if seen[id] {
				return nil
			}
			seen[id] = true
			total += st.Blocks * 512
		}
		return nil
	})
	return total, err
}
