// Package gcfloor keeps the Go collector from running over and over on a
// small heap that allocates fast: while the allocation rate is high, it
// gives the heap a floor below which no collection is triggered, and it
// leaves the collector as configured (GOGC) otherwise.
//
// A runner relaying agent output has a small live heap (a few MiB of
// frames in flight) and a high allocation rate (every relayed byte is
// copied into the event log and its frames): with GOGC=100 the collector
// then runs every few MiB allocated, dozens of times a second, and costs
// several percent of the relay's CPU. A floor of tens of MiB, small beside
// the agents' own memory, cuts that to about one collection a second. An
// idle runner allocates little, so the floor is off and costs no memory
// per idle session; above the floor it has no effect either. A raised floor
// is checked every CheckEvery, not only at the next collection: held until
// the heap reached it, a floor raised by a short burst (new sessions: a few
// MiB in a few milliseconds) scattered the burst's long-lived objects over a
// heap grown tenfold, which an idle runner then kept for minutes.
//
// An idle process is the other end: it allocates little, so its collector
// rarely runs, and the heap keeps what a burst left (dead objects, free
// spans) for minutes; a runner holding a NATS node allocates a little all
// the time and sits at its heap goal, twice its live heap. So while the
// process allocates less than IdleRate a second and keeps more than
// IdleSlack beyond its live heap, it collects and gives that memory back,
// checked every IdleEvery.
//
// Go has a ceiling (GOMEMLIMIT) but no floor, so the floor is kept by
// setting the GC percent after every collection from what that collection
// found. The GC percent is process-wide: one Floor per process, started
// by whoever owns the process (cmd/tether serve).
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Default is the floor the commands keep unless told otherwise: small
// beside an agent's own memory, large enough to cut a fast relay's
// collections to about one a second.
const Default = 64 << 20

// MaxPercent bounds the GC percent a floor sets: the heap goal stays
// within that many percent above the live heap, however small it is.
const MaxPercent = 2000

// The runtime/metrics samples a Floor reads, by index (see newSamples).
const (
	sampleLive = iota
	sampleStacks
	sampleGlobals
	sampleAllocs
	sampleGOGC
)

// Floor keeps a heap floor until Stop.
type Floor struct {
	floor uint64
	now   func() time.Time

	mu         sync.Mutex
	base       int // the GC percent when started, restored by Stop
	set        int // the GC percent last set
	stopped    bool
	samples    []metrics.Sample
	lastAllocs uint64    // allocs at the last adjustment
	lastTime   time.Time // and its time
	check      *time.Timer

	idleSamples []metrics.Sample
	idleAllocs  uint64    // allocs at the last idle check
	idleTime    time.Time // and its time
	idleCheck   *time.Timer
}

// CheckEvery is how often a raised floor checks that the process still
// allocates fast.
const CheckEvery = 100 * time.Millisecond

// Start keeps a heap floor of floor bytes until Stop, while the process
// allocates at least floor bytes a second. With a zero floor, or GOGC set
// in the environment (the operator chose the collector's pacing), it does
// nothing.
func Start(floor uint64) *Floor {
	if os.Getenv("GOGC") != "" {
		floor = 0
	}
	return start(floor, time.Now)
}

func start(floor uint64, now func() time.Time) *Floor {
	f := &Floor{floor: floor, now: now, samples: newSamples()}
	metrics.Read(f.samples)
	f.base = int(f.samples[sampleGOGC].Value.Uint64())
	f.set = f.base
	f.lastAllocs, f.lastTime = f.samples[sampleAllocs].Value.Uint64(), now()
	if f.base <= 0 || floor == 0 { // the collector is off, or the floor
		f.stopped = true
		return f
	}
	f.arm()
	f.idleSamples = newIdleSamples()
	metrics.Read(f.idleSamples)
	f.idleAllocs, f.idleTime = f.idleSamples[idleAllocs].Value.Uint64(), now()
	f.mu.Lock() // the timer's first check may come before start returns
	f.idleCheck = time.AfterFunc(IdleEvery, f.checkIdle)
	f.mu.Unlock()
	return f
}

// newSamples returns the samples a Floor reads, at their indexes.
func newSamples() []metrics.Sample {
	return []metrics.Sample{
		sampleLive:    {Name: "/gc/heap/live:bytes"},    // marked by the last collection
		sampleStacks:  {Name: "/gc/scan/stack:bytes"},   // stacks and globals also count
		sampleGlobals: {Name: "/gc/scan/globals:bytes"}, // towards the heap goal
		sampleAllocs:  {Name: "/gc/heap/allocs:bytes"},  // allocated since the start
		sampleGOGC:    {Name: "/gc/gogc:percent"},
	}
}

// Stop gives the collector back its GC percent from before Start. It is
// idempotent.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stopped = true
	if f.check != nil {
		f.check.Stop()
	}
	if f.idleCheck != nil {
		f.idleCheck.Stop()
	}
	if f.set != f.base {
		debug.SetGCPercent(f.base)
	}
}

// Percent returns the GC percent the floor last set.
func (f *Floor) Percent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.set
}

// sentinel is what a collection frees to tell the floor it ran. The
// pointer keeps it out of the tiny allocator, whose blocks are shared and
// may outlive a collection.
type sentinel struct {
	_ *int
	_ [8]byte
}

// arm registers an adjustment after the next collection; each one arms
// the next, until Stop.
func (f *Floor) arm() {
	runtime.AddCleanup(&sentinel{}, func(f *Floor) {
		if f.adjust() {
			f.arm()
		}
	}, f)
}

// adjust sets the GC percent for what the last collection found and the
// allocation rate since the last adjustment; it reports false once
// stopped.
func (f *Floor) adjust() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	fast, ok := f.sampleLocked()
	if !ok {
		return true
	}
	p := f.base
	if fast {
		scan := f.samples[sampleStacks].Value.Uint64() + f.samples[sampleGlobals].Value.Uint64()
		p = PercentFor(f.samples[sampleLive].Value.Uint64(), scan, f.floor, f.base)
	}
	f.setLocked(p)
	return true
}

// setLocked sets the GC percent, and while it is raised keeps a check on
// the rate armed. Under mu.
func (f *Floor) setLocked(p int) {
	if p != f.set {
		debug.SetGCPercent(p)
		f.set = p
	}
	if p != f.base && f.check == nil {
		f.check = time.AfterFunc(CheckEvery, f.recheck)
	}
}

// recheck lowers a raised floor when the process no longer allocates fast:
// the collector then runs at once on what the heap holds, rather than
// when the heap reaches the floor.
func (f *Floor) recheck() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.check = nil
	if f.stopped || f.set == f.base {
		return
	}
	if fast, ok := f.sampleLocked(); ok && !fast {
		f.setLocked(f.base)
		return
	}
	f.setLocked(f.set) // still raised: the check stays armed
}

// sampleLocked reads the runtime's metrics and says whether the process
// allocated at least floor bytes a second since the last sample; ok is
// false when no time has passed to tell a rate by. Under mu.
func (f *Floor) sampleLocked() (fast, ok bool) {
	metrics.Read(f.samples)
	now, allocs := f.now(), f.samples[sampleAllocs].Value.Uint64()
	elapsed := now.Sub(f.lastTime)
	if elapsed <= 0 {
		return false, false
	}
	fast = float64(allocs-f.lastAllocs) >= float64(f.floor)*elapsed.Seconds()
	f.lastAllocs, f.lastTime = allocs, now
	return fast, true
}

// PercentFor is the GC percent that puts the heap goal at floor or above,
// given the live heap and the stacks and globals (scan) the runtime counts
// with it: the goal is live plus that percent of live+scan. It is base
// when base reaches the floor already, and at most MaxPercent. Before the
// first collection live is 0, and unknown: base then.
func PercentFor(live, scan, floor uint64, base int) int {
	if live == 0 || live >= floor {
		return base
	}
	// live + (live+scan) * p / 100 >= floor, rounded up
	p := ((floor-live)*100 + live + scan - 1) / (live + scan)
	return max(base, int(min(p, MaxPercent)))
}

// IdleEvery is how often a process is checked for memory to give back.
const IdleEvery = time.Second

// IdleRate: a process that allocated less than this many bytes a second
// since the last check is idle.
const IdleRate = 256 << 10

// IdleSlack is what an idle process keeps beyond its live heap (dead
// objects, free spans not yet returned) before it gives it back: this
// much, or a sixteenth of the live heap if that is more. The collections
// it costs then come no closer than IdleSlack/IdleRate (4 s) apart, and
// the larger the heap, the further apart.
const IdleSlack = 1 << 20

// The runtime/metrics samples of the idle check, by index.
const (
	idleAllocs = iota
	idleLive
	idleObjects
	idleFree
)

func newIdleSamples() []metrics.Sample {
	return []metrics.Sample{
		idleAllocs:  {Name: "/gc/heap/allocs:bytes"},
		idleLive:    {Name: "/gc/heap/live:bytes"},
		idleObjects: {Name: "/memory/classes/heap/objects:bytes"}, // live, and dead not yet swept
		idleFree:    {Name: "/memory/classes/heap/free:bytes"},    // free, not yet returned
	}
}

// checkIdle gives memory back if the process is idle, and checks again
// IdleEvery later, until Stop.
func (f *Floor) checkIdle() {
	f.releaseIfIdle()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.idleCheck.Reset(IdleEvery)
	}
}

// releaseIfIdle collects and returns to the OS what the heap keeps beyond
// its live objects, when the process allocated slowly since the last check
// and keeps more than the slack; it reports whether it did.
func (f *Floor) releaseIfIdle() bool {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return false
	}
	metrics.Read(f.idleSamples)
	now, allocs := f.now(), f.idleSamples[idleAllocs].Value.Uint64()
	live, objects := f.idleSamples[idleLive].Value.Uint64(), f.idleSamples[idleObjects].Value.Uint64()
	kept := objects - min(live, objects) + f.idleSamples[idleFree].Value.Uint64() // dead objects and free spans
	release := Idle(allocs-f.idleAllocs, now.Sub(f.idleTime), live, kept)
	f.idleAllocs, f.idleTime = allocs, now
	f.mu.Unlock()
	if release {
		// Not under mu: the collection runs the floor's adjustment.
		debug.FreeOSMemory()
	}
	return release
}

// Idle says whether a process that allocated allocated bytes in elapsed,
// and keeps kept bytes beyond its live heap of live bytes, should give
// them back.
func Idle(allocated uint64, elapsed time.Duration, live, kept uint64) bool {
	if elapsed <= 0 || float64(allocated) >= IdleRate*elapsed.Seconds() {
		return false
	}
	return kept > max(IdleSlack, live/16)
}
