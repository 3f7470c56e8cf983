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
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/tetherhq/tether/internal/procstat"
)

// DefaultMinWindow is the shortest window a CPU share is measured over.
// /proc counts CPU time in clock ticks (10 ms) per process, so over a
// few milliseconds one tick of each of a few processes reads as several
// cores kept busy; over a second the error is a percent per process.
const DefaultMinWindow = time.Second

// TreeOptions configure a Tree.
type TreeOptions struct {
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// MinWindow is the shortest window a share is measured over
	// (0: DefaultMinWindow).
	MinWindow time.Duration
	// CPUs is how many cores the tree can keep busy (0:
	// runtime.NumCPU()): a share is never reported above 100 × CPUs.
	CPUs int
}

// Tree samples the process tree rooted at one pid.
type Tree struct {
	root      int
	now       func() time.Time
	minWindow time.Duration
	maxShare  float64

	mu sync.Mutex
	// The start of the window being measured: the tree's CPU time then
	// and when.
	lastCPU  time.Duration
	lastTime time.Time
	share    float64       // over the last full window
	window   time.Duration // of the last full window; 0 before one
}

// NewTree measures the tree under root (os.Getpid() for "this process and
// what it runs") from now on: the first CPU share is over the first
// window of at least DefaultMinWindow since NewTree. now nil means
// time.Now.
func NewTree(root int, now func() time.Time) *Tree {
	return NewTreeWith(root, TreeOptions{Now: now})
}

// NewTreeWith is NewTree with options.
func NewTreeWith(root int, opts TreeOptions) *Tree {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MinWindow <= 0 {
		opts.MinWindow = DefaultMinWindow
	}
	if opts.CPUs <= 0 {
		opts.CPUs = runtime.NumCPU()
	}
	t := &Tree{root: root, now: opts.Now, minWindow: opts.MinWindow, maxShare: 100 * float64(opts.CPUs)}
	t.lastCPU, _ = t.cpu() // a tree not there yet starts from nothing
	t.lastTime = t.now()
	return t
}

// cpu is the tree's CPU time so far.
func (t *Tree) cpu() (time.Duration, error) {
	s, err := t.read()
	return s.cpu, err
}

// Sample is a tree's use at one moment.
type Sample struct {
	// CPUPercent is the tree's CPU time over the last window of at least
	// the minimum (the first: from NewTree on), as a share of the
	// window's wall time: 100 is one core kept busy. It is 0 until the
	// first window has passed, and never above 100 × the cores.
	CPUPercent float64
	// CPUWindow is the window CPUPercent is over; 0 when none has
	// passed yet (CPUPercent is not measured then).
	CPUWindow time.Duration
	// RSSBytes is the resident memory of its live processes, summed.
	RSSBytes int64
	// Processes is how many live processes it has, root included.
	Processes int
}

// Sample reads the tree now. A window ends at the first sample at least
// the minimum window after it began, and the next one begins there;
// samples within a window tell the last window's share again.
func (t *Tree) Sample() (Sample, error) {
	r, err := t.read()
	if err != nil {
		return Sample{}, err
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if wall := now.Sub(t.lastTime); wall >= t.minWindow {
		// A tree whose CPU time went down lost a process (and what it
		// used) meanwhile: the window tells nothing above 0.
		used := max(r.cpu-t.lastCPU, 0)
		t.share = min(100*float64(used)/float64(wall), t.maxShare)
		t.window = wall
		t.lastCPU, t.lastTime = r.cpu, now
	}
	return Sample{CPUPercent: t.share, CPUWindow: t.window, RSSBytes: r.rss, Processes: r.processes}, nil
}

// reading is a tree's totals at one moment.
type reading struct {
	cpu       time.Duration // its own and its reaped children's, per process
	rss       int64
	processes int
}

// read walks the tree from its root down; processes that end meanwhile
// are passed over.
func (t *Tree) read() (reading, error) {
	root, err := procstat.Read(t.root)
	if err != nil {
		return reading{}, fmt.Errorf("usage: process %d: %w", t.root, err)
	}
	r := reading{cpu: root.CPU, rss: root.RSS, processes: 1}
	children := procstat.NewChildLister()
	queue := children(t.root)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		st, err := procstat.Read(pid)
		if err != nil {
			continue // gone
		}
		r.cpu, r.rss, r.processes = r.cpu+st.CPU, r.rss+st.RSS, r.processes+1
		queue = append(queue, children(pid)...)
	}
	return r, nil
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
