package shim

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

// FuzzHubStart: where a client resuming after event `seq` of a run starts
// reading, over a hub that dropped its oldest events. The position is
// exactly after that event (before the run's next one), an event no longer
// kept or a run never seen is ErrGone, and a sequence the run has not
// reached (or a negative one) is ErrOutOfRange: never a position outside
// what is kept, which follow would slice with.
func FuzzHubStart(f *testing.F) {
	f.Add(uint8(3), []byte{0, 0, 1, 1, 1, 2}, uint8(1), int64(0))
	f.Add(uint8(3), []byte{0, 0, 1, 1, 1}, uint8(1), int64(2))
	f.Add(uint8(15), []byte{0, 1, 0, 1}, uint8(0), int64(1))
	f.Add(uint8(2), []byte{0, 0, 0, 1, 1}, uint8(0), int64(1))
	f.Add(uint8(15), []byte{0, 0}, uint8(0), int64(math.MaxInt64))
	f.Add(uint8(15), []byte{0, 0}, uint8(0), int64(math.MinInt64))
	f.Add(uint8(15), []byte{0, 0}, uint8(0), int64(-1))
	f.Add(uint8(15), []byte{0, 0}, uint8(0), int64(3))
	f.Add(uint8(15), []byte{0, 0}, uint8(3), int64(0))
	f.Fuzz(func(t *testing.T, retain uint8, appends []byte, query uint8, seq int64) {
		h := newHub(1 + int(retain%16))
		var all []cursor // every event appended, dropped or not
		next := map[string]int64{}
		for _, b := range appends {
			run := "r" + strconv.Itoa(int(b%3))
			next[run]++
			k := cursor{run: run, seq: next[run]}
			all = append(all, k)
			h.append([]byte(strconv.Itoa(len(all))), k)
		}
		run := "r" + strconv.Itoa(int(query%4)) // r3 is never seen
		pos, err := h.start(run, seq, false)

		dropped := len(all) - len(h.keys)
		kept := func(i int) bool { return i >= dropped } // all[i] is still in the hub
		last, present := int64(0), false
		for i, k := range all {
			if k.run == run && kept(i) {
				present = true
			}
			if k.run == run {
				last = k.seq
			}
		}
		switch {
		case seq < 0:
			if !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("after %d: %d, %v", seq, pos, err)
			}
			return
		case !present:
			if !errors.Is(err, ErrGone) {
				t.Fatalf("run %s is not kept: %d, %v", run, pos, err)
			}
			return
		case seq > last:
			if !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("after %d of run %s (its last is %d): %d, %v", seq, run, last, pos, err)
			}
			return
		}
		lost := false // an event of the run after seq was dropped
		for i, k := range all {
			lost = lost || (k.run == run && k.seq > seq && !kept(i))
		}
		if lost {
			if !errors.Is(err, ErrGone) {
				t.Fatalf("after %d of run %s, an event after it was dropped: %d, %v", seq, run, pos, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("after %d of run %s: %v", seq, run, err)
		}
		if pos < h.base || pos > h.base+int64(len(h.frames)) {
			t.Fatalf("position %d outside what is kept (%d, %d]", pos, h.base, h.base+int64(len(h.frames)))
		}
		for i, k := range h.keys {
			before := h.base+int64(i) < pos
			if k.run == run && before != (k.seq <= seq) {
				t.Fatalf("after %d of run %s: position %d, event %d of the run at %d", seq, run, pos, k.seq, h.base+int64(i)+1)
			}
		}
		// The first frame after pos, if of the run, is the one after seq;
		// no other run's frame between seq and it is skipped.
		for i := pos - h.base; i < int64(len(h.keys)); i++ {
			if h.keys[i].run == run {
				if h.keys[i].seq != seq+1 {
					t.Fatalf("after %d of run %s, the next is %d", seq, run, h.keys[i].seq)
				}
				break
			}
		}
		for i, k := range h.keys { // right after the event named, when it is kept
			if k.run == run && k.seq == seq && h.base+int64(i)+1 != pos {
				t.Fatalf("after %d of run %s: position %d, the event is at %d", seq, run, pos, h.base+int64(i)+1)
			}
		}
	})
}
