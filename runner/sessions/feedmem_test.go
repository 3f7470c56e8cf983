package sessions

import (
	"math"
	"testing"

	"github.com/tetherhq/tether/agent"
)

// since takes a reader's cursor as it came: any uint64, past the end or
// before the start, must give what is there (or "read the log"), never
// an index out of range.
func TestFeedSinceAnyCursor(t *testing.T) {
	f := newFeed()
	for pos := uint64(10); pos <= 20; pos++ {
		f.keep(FeedEvent{Pos: pos})
	}
	for _, tc := range []struct {
		after    uint64
		n        int
		inMemory bool
	}{
		{0, 0, false}, {8, 0, false}, {9, 11, true}, {15, 5, true}, {19, 1, true}, {20, 0, true},
		{21, 0, true}, {1 << 63, 0, true}, {math.MaxInt64 + 1, 0, true}, {math.MaxUint64 - 1, 0, true}, {math.MaxUint64, 0, true},
	} {
		got, ok := f.since(tc.after)
		if len(got) != tc.n || ok != tc.inMemory {
			t.Errorf("since(%d): %d events, in memory %v; want %d, %v", tc.after, len(got), ok, tc.n, tc.inMemory)
		}
		if len(got) > 0 && got[0].Pos != tc.after+1 {
			t.Errorf("since(%d) starts at %d", tc.after, got[0].Pos)
		}
	}
}

func FuzzFeedSince(f *testing.F) {
	for _, after := range []uint64{0, 1, 5, 9, 1 << 63, math.MaxUint64, math.MaxUint64 - 1} {
		f.Add(uint64(10), uint16(100), after)
	}
	f.Fuzz(func(t *testing.T, first uint64, n uint16, after uint64) {
		if first == 0 || first > math.MaxUint64-uint64(n) {
			t.Skip()
		}
		fd := newFeed()
		for i := range uint64(n) {
			fd.keep(FeedEvent{Pos: first + i})
		}
		got, ok := fd.since(after)
		for i, fe := range got {
			if fe.Pos != after+1+uint64(i) {
				t.Fatalf("since(%d)[%d] = %d", after, i, fe.Pos)
			}
		}
		if n > 0 && after >= first-1 && !ok {
			t.Fatalf("since(%d) went to the log though memory holds %d…%d", after, first, first+uint64(n)-1)
		}
	})
}

// The feed keeps events in memory only while someone reads it: without a
// reader they would hold their payloads and log records in the heap for
// nobody; the last reader out drops what was kept.
func TestFeedKeepsOnlyForReaders(t *testing.T) {
	f := newFeed()
	events := make([]agent.Event, 3)
	f.logged(1, events)
	if got, ok := f.since(0); len(got) != 0 || ok {
		t.Fatalf("without readers: %d events kept (in memory %v), want none", len(got), ok)
	}
	f.join()
	f.join()
	f.logged(4, events)
	if got, ok := f.since(3); len(got) != 3 || !ok {
		t.Fatalf("with readers: since(3) gave %d events (in memory %v), want 3", len(got), ok)
	}
	f.leave()
	if got, _ := f.since(3); len(got) != 3 {
		t.Fatalf("one reader left, one reads on: %d events kept, want 3", len(got))
	}
	f.leave()
	if len(f.recent) != 0 {
		t.Fatalf("the last reader left: %d events still kept", len(f.recent))
	}
}
