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
	"sync"
	"syscall"
	"time"

	"github.com/tetherhq/tether/internal/procstat"
)

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
	s, err := t.read()
	return s.cpu, err
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
	r, err := t.read()
	if err != nil {
		return Sample{}, err
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Sample{RSSBytes: r.rss, Processes: r.processes}
	if wall := now.Sub(t.lastTime); wall > 0 && r.cpu >= t.lastCPU {
		s.CPUPercent = 100 * float64(r.cpu-t.lastCPU) / float64(wall)
	}
	t.lastCPU, t.lastTime = r.cpu, now
	return s, nil
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
