package shim

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
)

// FuzzRunsStart: where a client resuming after event `seq` of a run
// starts, over runs of which the oldest were let go. It is exactly after
// that event of that run; a run let go or never had is ErrGone; a
// sequence the run has not reached (or a negative one) is ErrOutOfRange:
// never a place outside what is kept.
func FuzzRunsStart(f *testing.F) {
	f.Add(uint8(3), []byte{3, 0, 5}, uint8(1), int64(0))
	f.Add(uint8(3), []byte{3, 0, 5}, uint8(2), int64(5))
	f.Add(uint8(1), []byte{3, 4}, uint8(0), int64(1))
	f.Add(uint8(15), []byte{2}, uint8(0), int64(math.MaxInt64))
	f.Add(uint8(15), []byte{2}, uint8(0), int64(math.MinInt64))
	f.Add(uint8(15), []byte{2}, uint8(0), int64(-1))
	f.Add(uint8(15), []byte{2}, uint8(0), int64(3))
	f.Add(uint8(15), []byte{2}, uint8(7), int64(0))
	f.Fuzz(func(t *testing.T, keep uint8, counts []byte, query uint8, seq int64) {
		rs, err := openRuns("", 1+int(keep%4))
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range counts {
			e, err := rs.add(runRecord{ID: "r" + strconv.Itoa(i)})
			if err != nil {
				t.Fatal(err)
			}
			if err := rs.decide(e, 0, int64(n%8), nil); err != nil {
				t.Fatal(err)
			}
		}
		q := int(query % 8)
		c, err := rs.start(context.Background(), "r"+strconv.Itoa(q), seq, false, nil)
		kept := q < len(counts) && q >= len(counts)-rs.max
		switch {
		case seq < 0:
			if !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("after %d: %+v, %v", seq, c, err)
			}
		case !kept:
			if !errors.Is(err, ErrGone) {
				t.Fatalf("run %d of %d is not kept (the newest %d are): %+v, %v", q, len(counts), rs.max, c, err)
			}
		case seq > int64(counts[q]%8):
			if !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("after %d of run %d (its last is %d): %+v, %v", seq, q, counts[q]%8, c, err)
			}
		case err != nil:
			t.Fatalf("after %d of run %d: %v", seq, q, err)
		case c != cursor{run: int64(q), seq: seq}:
			t.Fatalf("after %d of run %d: %+v", seq, q, c)
		default:
			if e, ok := rs.entry(c.run); !ok || e == nil || e.rec.ID != "r"+strconv.Itoa(q) {
				t.Fatalf("the cursor %+v names no kept run", c)
			}
		}
	})
}
