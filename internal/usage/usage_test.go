package usage

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A tree counts the processes below its root, their memory, and the CPU a
// busy one burns, as a share of the wall time between samples.
func TestTreeMeasuresABusyChild(t *testing.T) {
	busy := exec.Command("sh", "-c", "sleep 60 & while :; do :; done")
	busy.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its sleep ends with it
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-busy.Process.Pid, syscall.SIGKILL)
		_ = busy.Wait()
	})
	tree := NewTree(os.Getpid(), nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := tree.Sample()
		if err != nil {
			t.Fatal(err)
		}
		// the test, the shell and its sleep
		if s.Processes >= 3 && s.RSSBytes > 1<<20 && s.CPUPercent > 20 {
			t.Logf("%+v", s)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last sample %+v", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The shell's own tree holds it and its sleep, not the test.
	s, err := NewTree(busy.Process.Pid, nil).Sample()
	if err != nil || s.Processes != 2 {
		t.Fatalf("the shell's tree: %+v %v", s, err)
	}
}

func TestTreeOfNoProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := NewTree(cmd.Process.Pid, nil).Sample(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a reaped process: %v", err)
	}
}

// DirBytes counts every file's blocks once (a hard link is the same file)
// and does not follow symlinks out of the directory.
func TestDirBytes(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	mb := make([]byte, 1<<20)
	for i := range mb {
		mb[i] = byte(i) // not all zeros: no sparse blocks
	}
	for _, name := range []string{"a", "sub/b", "sub/deeper/c"} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, mb, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "a-again")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "big"), make([]byte, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	n, err := DirBytes(context.Background(), dir)
	if err != nil || n < 3<<20 || n > 3<<20+256<<10 {
		t.Fatalf("%d bytes (%.2f MiB), %v", n, float64(n)/(1<<20), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := DirBytes(ctx, dir); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled walk: %v", err)
	}
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// burn keeps this process busy until it has used at least d more CPU
// time, as /proc counts it (in clock ticks).
func burn(t *testing.T, d time.Duration) {
	t.Helper()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	deadline := time.Now().Add(20 * time.Second)
	for x := 0; cpu()-start < d+20*time.Millisecond; x++ { // a tick more than asked
		if time.Now().After(deadline) {
			t.Fatalf("could not burn %v of CPU in 20 s", d)
		}
	}
}

// A share over a window too short to measure (the CPU time moves in
// clock ticks, 10 ms per process) is not reported: the first /health of
// a fresh shim read 444–570% on two cores. Once a long enough window has
// passed, the share is over it.
func TestTreeShareNeedsAWindow(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	tree := NewTree(os.Getpid(), clock.Now)
	burn(t, 40*time.Millisecond)
	clock.Advance(time.Millisecond)
	s, err := tree.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUPercent != 0 || s.CPUWindow != 0 {
		t.Fatalf("a share over 1 ms was reported: %+v", s)
	}
	clock.Advance(DefaultMinWindow)
	s, err = tree.Sample()
	if err != nil {
		t.Fatal(err)
	}
	limit := 100 * float64(runtime.NumCPU())
	if s.CPUWindow != DefaultMinWindow+time.Millisecond || s.CPUPercent <= 0 || s.CPUPercent > limit {
		t.Fatalf("the share over a full window: %+v (at most %.0f)", s, limit)
	}
	// A sample before the next full window tells the last share again.
	clock.Advance(time.Millisecond)
	again, err := tree.Sample()
	if err != nil || again.CPUPercent != s.CPUPercent || again.CPUWindow != s.CPUWindow {
		t.Fatalf("between windows: %+v, want the last share %+v (%v)", again, s, err)
	}
}

// Whatever the window, a share above 100 × the cores there are is
// impossible and is never reported: it is cut to that.
func TestTreeShareIsClamped(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	tree := NewTreeWith(os.Getpid(), TreeOptions{Now: clock.Now, MinWindow: time.Millisecond, CPUs: 1})
	burn(t, 40*time.Millisecond)
	clock.Advance(time.Millisecond)
	s, err := tree.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUPercent != 100 || s.CPUWindow != time.Millisecond {
		t.Fatalf("%+v: want the share clamped to 100 (one core)", s)
	}
}
