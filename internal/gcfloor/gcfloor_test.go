package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, scan, floor uint64
		base, want        int
	}{
		{live: 64 * mib, floor: 64 * mib, base: 100, want: 100},  // at the floor: as configured
		{live: 200 * mib, floor: 64 * mib, base: 100, want: 100}, // above it
		{live: 32 * mib, floor: 64 * mib, base: 100, want: 100},  // GOGC=100 reaches it already
		{live: 16 * mib, floor: 64 * mib, base: 100, want: 300},  // goal 16 + 16*3 = 64
		{live: 10 * mib, floor: 64 * mib, base: 100, want: 540},
		{live: 12 * mib, scan: 4 * mib, floor: 64 * mib, base: 100, want: 325}, // 12 + 16*3.25 = 64
		{live: 3 * mib, floor: 64 * mib, base: 100, want: MaxPercent},          // 2034 % capped
		{live: 0, floor: 64 * mib, base: 100, want: 100},                       // no collection yet
		{live: 16 * mib, floor: 64 * mib, base: 400, want: 400},                // a larger GOGC stays
		{live: 7, floor: 10, base: 1, want: 43},                                // rounded up: 7 + 7*.43 >= 10
		{live: 1, floor: 1 << 62, base: 100, want: MaxPercent},                 // no overflow
	} {
		got := PercentFor(tc.live, tc.scan, tc.floor, tc.base)
		if got != tc.want {
			t.Errorf("PercentFor(%d, %d, %d, %d) = %d, want %d", tc.live, tc.scan, tc.floor, tc.base, got, tc.want)
		}
		if tc.live > 0 && got < MaxPercent && tc.live+(tc.live+tc.scan)*uint64(got)/100 < min(tc.floor, tc.live*21) {
			t.Errorf("PercentFor(%d, %d, %d, %d) = %d: goal below the floor", tc.live, tc.scan, tc.floor, tc.base, got)
		}
	}
}

// clock is a test's time, moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// startFloor starts a floor far above a test's heap, with GOGC=100 and
// a clock the test moves, until the test ends.
func startFloor(t *testing.T) (*Floor, *clock) {
	base := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(base) })
	runtime.GC()
	clk := &clock{t: time.Unix(1000, 0)}
	f := start(512<<20, clk.now)
	t.Cleanup(f.Stop)
	return f, clk
}

// garbage allocates n MiB that die at once.
func garbage(n int) {
	for range n {
		b := make([]byte, 1<<20)
		b[0] = 1
		runtime.KeepAlive(b)
	}
}

// TestFloorFollowsAllocationRate: after a collection, the percent is raised
// while the process allocated fast since the last one, lowered when it did
// not, and given back by Stop.
func TestFloorFollowsAllocationRate(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	runtime.GC()

	clk := &clock{t: time.Unix(1000, 0)}
	f := start(512<<20, clk.now) // far above this test's heap
	defer f.Stop()
	if got := f.Percent(); got != 100 {
		t.Fatalf("GC percent after Start = %d, want 100 until a collection", got)
	}

	// 64 MiB in a millisecond: fast.
	garbage(64)
	clk.add(time.Millisecond)
	waitPercent(t, f, clk, 0, MaxPercent)

	// Nothing in ten seconds: slow, the floor is off.
	clk.add(10 * time.Second)
	waitPercent(t, f, clk, 0, 100)

	f.Stop()
	f.Stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent after Stop = %d, want 100", got)
	}
	garbage(64)
	runtime.GC() // a stopped floor sets nothing more
	time.Sleep(10 * time.Millisecond)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent after Stop and a collection = %d, want 100", got)
	}
}

// TestRaisedFloorLoweredWhenTheRateFalls: a floor raised by a burst is
// lowered by the next check once the process allocates slowly, without
// waiting for a collection (which a raised floor puts off until the heap
// reaches it); a process still allocating fast keeps it.
func TestRaisedFloorLoweredWhenTheRateFalls(t *testing.T) {
	f, clk := startFloor(t)
	garbage(64)
	clk.add(time.Millisecond)
	waitPercent(t, f, clk, 0, MaxPercent)

	garbage(64) // 64 MiB in another millisecond: still fast
	clk.add(time.Millisecond)
	f.recheck()
	if got := f.Percent(); got != MaxPercent {
		t.Fatalf("GC percent after a fast check = %d, want %d", got, MaxPercent)
	}
	clk.add(CheckEvery) // nothing allocated since: slow
	f.recheck()
	if got := f.Percent(); got != 100 {
		t.Fatalf("GC percent after a slow check = %d, want 100", got)
	}
}

// TestStopRestoresRaisedPercent: Stop while the floor is raised.
func TestStopRestoresRaisedPercent(t *testing.T) {
	f, clk := startFloor(t)
	garbage(64)
	clk.add(time.Millisecond)
	waitPercent(t, f, clk, 0, MaxPercent)
	f.Stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent after Stop = %d, want 100", got)
	}
}

// waitPercent collects until the floor has set want; the adjustment runs
// on the runtime's cleanup goroutine, after the collection. Each round
// allocates mib MiB and moves the clock by nothing.
func waitPercent(t *testing.T, f *Floor, clk *clock, mib int, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for f.Percent() != want {
		if time.Now().After(deadline) {
			t.Fatalf("GC percent = %d, want %d", f.Percent(), want)
		}
		garbage(mib)
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

func TestStartWithCollectorOff(t *testing.T) {
	base := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(base)
	f := Start(64 << 20)
	defer f.Stop()
	garbage(16)
	runtime.GC()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("GC percent = %d with the collector off, want it left off", got)
	}
}

// With GOGC in the environment the operator chose the pacing: no floor.
func TestStartLeavesGOGCAlone(t *testing.T) {
	t.Setenv("GOGC", "100")
	f := Start(512 << 20)
	defer f.Stop()
	f.mu.Lock()
	stopped := f.stopped
	f.mu.Unlock()
	if !stopped {
		t.Fatal("a floor started with GOGC set")
	}
}

func TestIdle(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		allocated  uint64
		elapsed    time.Duration
		live, kept uint64
		want       bool
		why        string
	}{
		{0, time.Second, 10 * mib, 20 * mib, true, "idle, twice its live heap"},
		{IdleRate / 2, time.Second, 10 * mib, 5 * mib, true, "slow, above the slack"},
		{IdleRate, time.Second, 10 * mib, 20 * mib, false, "allocating at the idle rate"},
		{64 * mib, time.Second, 10 * mib, 20 * mib, false, "busy"},
		{0, time.Second, 10 * mib, IdleSlack, false, "within the slack"},
		{0, time.Second, 160 * mib, 10 * mib, false, "within a sixteenth of a large live heap"},
		{0, time.Second, 160 * mib, 11 * mib, true, "beyond a sixteenth of it"},
		{0, 0, 10 * mib, 20 * mib, false, "no time to tell a rate by"},
	} {
		if got := Idle(tc.allocated, tc.elapsed, tc.live, tc.kept); got != tc.want {
			t.Errorf("%s: Idle(%d, %v, %d, %d) = %v, want %v", tc.why, tc.allocated, tc.elapsed, tc.live, tc.kept, got, tc.want)
		}
	}
}

// heapKept is what the heap holds beyond its live objects and has not
// returned: dead objects and free spans.
func heapKept() uint64 {
	s := newIdleSamples()
	metrics.Read(s)
	runtime.GC() // live as of now
	metrics.Read(s)
	return s[idleObjects].Value.Uint64() + s[idleFree].Value.Uint64() - s[idleLive].Value.Uint64()
}

// TestIdleProcessGivesMemoryBack: a process that made garbage and then
// went quiet gives the memory back at its next check; one still
// allocating fast keeps it, and so does one with nothing to give.
func TestIdleProcessGivesMemoryBack(t *testing.T) {
	f, clk := startFloor(t)

	garbage(64) // in a millisecond: busy
	clk.add(time.Millisecond)
	if f.releaseIfIdle() {
		t.Fatal("a process allocating 64 MiB a millisecond gave its memory back")
	}
	debug.SetGCPercent(-1) // keep what follows as garbage until the check
	garbage(64)
	clk.add(time.Hour) // then quiet
	if !f.releaseIfIdle() {
		t.Fatal("an idle process holding 64 MiB of garbage kept it")
	}
	debug.SetGCPercent(100)
	if kept := heapKept(); kept > IdleSlack {
		t.Fatalf("after giving memory back the heap keeps %d bytes beyond its live objects", kept)
	}
	clk.add(time.Hour)
	if f.releaseIfIdle() {
		t.Fatal("an idle process with nothing to give back collected again")
	}
}
