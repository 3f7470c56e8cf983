package eventlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		os.Exit(crashChild(mode, os.Getenv(childPathEnv)))
	}
	goleak.VerifyTestMain(m)
}

// open opens a log in a fresh temporary directory, closed at cleanup.
func open(t testing.TB, opts Options) (*Bolt, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	return reopen(t, path, opts), path
}

// toDisk commits everything appended and drops the committed events the
// log keeps in memory (see keep), so that reads go to the file.
func toDisk(t testing.TB, l *Bolt) {
	t.Helper()
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.dropAllKept()
	l.mu.Unlock()
}

func reopen(t testing.TB, path string, opts Options) *Bolt {
	t.Helper()
	l, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func mustAppend(t testing.TB, l *Bolt, session string, payload []byte) uint64 {
	t.Helper()
	seq, err := l.Append(context.Background(), session, payload)
	if err != nil {
		t.Fatalf("Append(%q): %v", session, err)
	}
	return seq
}

// readAll collects what Read yields and the error that ended it.
func readAll(l *Bolt, session string, after uint64) ([]Event, error) {
	var evs []Event
	for ev, err := range l.Read(context.Background(), session, after) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// checkRange verifies that evs are exactly seqs from..to, in order, with
// the payloads given by want (nil: not checked).
func checkRange(t testing.TB, evs []Event, from, to uint64, want func(seq uint64) string) {
	t.Helper()
	if n := uint64(len(evs)); n != to-from+1 && !(to < from && n == 0) {
		t.Fatalf("got %d events, want %d (seqs %d..%d)", len(evs), to-from+1, from, to)
	}
	for i, ev := range evs {
		if ev.Seq != from+uint64(i) {
			t.Fatalf("event %d has seq %d, want %d", i, ev.Seq, from+uint64(i))
		}
		if want != nil && string(ev.Payload) != want(ev.Seq) {
			t.Fatalf("event %d: payload %q, want %q", ev.Seq, ev.Payload, want(ev.Seq))
		}
	}
}

func seqPayload(seq uint64) string { return "p" + strconv.FormatUint(seq, 10) }

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestSeqStartsAtOneAndIncreases(t *testing.T) {
	ctx := context.Background()
	l, _ := open(t, Options{})
	for i := uint64(1); i <= 5; i++ {
		for _, s := range []string{"a", "b"} {
			if seq := mustAppend(t, l, s, []byte(seqPayload(i))); seq != i {
				t.Fatalf("session %s: seq %d, want %d", s, seq, i)
			}
		}
	}
	first, err := l.AppendBatch(ctx, "a", [][]byte{[]byte("p6"), []byte("p7"), []byte("p8")})
	if err != nil || first != 6 {
		t.Fatalf("AppendBatch = %d, %v; want 6", first, err)
	}
	if seq := mustAppend(t, l, "a", []byte("p9")); seq != 9 {
		t.Fatalf("seq after batch = %d, want 9", seq)
	}
	if first, err := l.AppendBatch(ctx, "a", nil); first != 0 || err != nil {
		t.Fatalf("empty AppendBatch = %d, %v", first, err)
	}
	for s, want := range map[string]uint64{"a": 9, "b": 5, "none": 0} {
		if last, err := l.Last(s); last != want || err != nil {
			t.Errorf("Last(%s) = %d, %v; want %d", s, last, err, want)
		}
		if first, err := l.First(s); first != 1 || err != nil {
			t.Errorf("First(%s) = %d, %v; want 1", s, first, err)
		}
	}
	evs, err := readAll(l, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 1, 9, seqPayload)
	if names, _ := l.Sessions(); !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("Sessions = %v", names)
	}
	if _, err := l.Append(ctx, "", nil); !errors.Is(err, ErrInvalidSession) {
		t.Errorf("Append to empty name: %v", err)
	}
}

func TestConcurrentAppends(t *testing.T) {
	const (
		sessions   = 4
		goroutines = 8
		perG       = 400
	)
	l, path := open(t, Options{})
	type rec struct {
		seq     uint64
		payload string
	}
	results := make([][]rec, sessions*goroutines)
	var wg sync.WaitGroup
	for g := range sessions * goroutines {
		wg.Go(func() {
			session := fmt.Sprintf("s%d", g%sessions)
			for i := 0; i < perG; {
				if i%10 == 0 { // every tenth append is a batch of three
					ps := [][]byte{[]byte(fmt.Sprintf("g%d-%d", g, i)), []byte(fmt.Sprintf("g%d-%d", g, i+1)), []byte(fmt.Sprintf("g%d-%d", g, i+2))}
					first, err := l.AppendBatch(context.Background(), session, ps)
					if err != nil {
						t.Error(err)
						return
					}
					for j, p := range ps {
						results[g] = append(results[g], rec{first + uint64(j), string(p)})
					}
					i += 3
					continue
				}
				p := fmt.Sprintf("g%d-%d", g, i)
				seq, err := l.Append(context.Background(), session, []byte(p))
				if err != nil {
					t.Error(err)
					return
				}
				results[g] = append(results[g], rec{seq, p})
				i++
			}
		})
	}
	wg.Wait()

	want := make([]map[uint64]string, sessions)
	for s := range want {
		want[s] = make(map[uint64]string)
	}
	for g, rs := range results {
		for _, r := range rs {
			m := want[g%sessions]
			if prev, dup := m[r.seq]; dup {
				t.Fatalf("seq %d given twice (%q, %q)", r.seq, prev, r.payload)
			}
			m[r.seq] = r.payload
		}
	}
	check := func(l *Bolt) {
		t.Helper()
		for s := range sessions {
			name := fmt.Sprintf("s%d", s)
			n := uint64(len(want[s]))
			if n != goroutines*perG {
				t.Fatalf("%s: %d seqs recorded, want %d", name, n, goroutines*perG)
			}
			if last, _ := l.Last(name); last != n {
				t.Fatalf("%s: Last = %d, want %d", name, last, n)
			}
			evs, err := readAll(l, name, 0)
			if err != nil {
				t.Fatal(err)
			}
			checkRange(t, evs, 1, n, func(seq uint64) string { return want[s][seq] })
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check(reopen(t, path, Options{}))
}

func TestReadWhileAppending(t *testing.T) {
	for _, interval := range []time.Duration{-1, 0, 20 * time.Millisecond} {
		t.Run(fmt.Sprint("FlushInterval=", interval), func(t *testing.T) {
			const total = 20_000
			l, _ := open(t, Options{FlushInterval: interval})
			ctx := context.Background()
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := uint64(1); i <= total; i++ {
					if _, err := l.Append(ctx, "s", []byte(seqPayload(i))); err != nil {
						t.Error(err)
						return
					}
				}
			})
			// Snapshot readers: everything up to Last at the call, from
			// various positions.
			for r := range 2 {
				wg.Go(func() {
					for i := 0; ; i++ {
						last, err := l.Last("s")
						if err != nil {
							t.Error(err)
							return
						}
						after := last / uint64(2+r+i%3)
						evs, err := readAll(l, "s", after)
						if err != nil {
							t.Error(err)
							return
						}
						if uint64(len(evs)) < last-after {
							t.Errorf("read %d events after %d, Last before the call was %d", len(evs), after, last)
							return
						}
						if len(evs) > 0 {
							checkRange(t, evs, after+1, evs[len(evs)-1].Seq, seqPayload)
						}
						if last == total {
							return
						}
					}
				})
			}
			// A live tail: follows from 0 to the end without gaps.
			var tail []Event
			after := uint64(0)
			for after < total {
				for ev, err := range l.Read(ctx, "s", after) {
					if err != nil {
						t.Fatal(err)
					}
					tail = append(tail, ev)
					after = ev.Seq
				}
			}
			wg.Wait()
			checkRange(t, tail, 1, total, seqPayload)
		})
	}
}

func TestReopenKeepsEventsAndContinuesSeqs(t *testing.T) {
	l, path := open(t, Options{FlushInterval: time.Hour}) // only Close commits
	for i := uint64(1); i <= 10; i++ {
		mustAppend(t, l, "s", []byte(seqPayload(i)))
	}
	mustAppend(t, l, "other", []byte("x"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = reopen(t, path, Options{})
	if last, _ := l.Last("s"); last != 10 {
		t.Fatalf("Last after reopen = %d, want 10", last)
	}
	if seq := mustAppend(t, l, "s", []byte(seqPayload(11))); seq != 11 {
		t.Fatalf("seq after reopen = %d, want 11", seq)
	}
	evs, err := readAll(l, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 1, 11, seqPayload)
	if names, _ := l.Sessions(); !slices.Equal(names, []string{"other", "s"}) {
		t.Errorf("Sessions after reopen = %v", names)
	}
}

func TestRetentionByCount(t *testing.T) {
	l, path := open(t, Options{MaxEventsPerSession: 10})
	for i := uint64(1); i <= 25; i++ {
		mustAppend(t, l, "s", []byte(seqPayload(i)))
	}
	expectBounds(t, l, "s", 16, 25)
	if _, err := readAll(l, "s", 14); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Read after 14: %v, want ErrTruncated", err)
	}
	evs, err := readAll(l, "s", 15)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 16, 25, seqPayload)
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := diskEvents(t, l, "s"); n != 10 {
		t.Errorf("%d events on disk, want 10", n)
	}

	// A batch larger than the limit keeps only its newest events.
	ps := make([][]byte, 30)
	for i := range ps {
		ps[i] = []byte(seqPayload(26 + uint64(i)))
	}
	if _, err := l.AppendBatch(context.Background(), "s", ps); err != nil {
		t.Fatal(err)
	}
	expectBounds(t, l, "s", 46, 55)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = reopen(t, path, Options{MaxEventsPerSession: 10})
	expectBounds(t, l, "s", 46, 55)
	if n := diskEvents(t, l, "s"); n != 10 {
		t.Errorf("%d events on disk after reopen, want 10", n)
	}
	if seq := mustAppend(t, l, "s", []byte(seqPayload(56))); seq != 56 {
		t.Fatalf("seq after reopen = %d, want 56", seq)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A smaller limit applies on Open.
	l = reopen(t, path, Options{MaxEventsPerSession: 4})
	expectBounds(t, l, "s", 53, 56)
	evs, err = readAll(l, "s", 52)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 53, 56, seqPayload)
}

func TestSlowReaderGetsTruncated(t *testing.T) {
	ctx := context.Background()
	l, _ := open(t, Options{MaxEventsPerSession: 2000})
	for i := uint64(1); i <= 2000; i++ {
		mustAppend(t, l, "s", []byte(seqPayload(i)))
	}
	toDisk(t, l) // the first chunk is a full one
	var n int
	var err error
	for ev, e := range l.Read(ctx, "s", 0) {
		if e != nil {
			err = e
			break
		}
		if ev.Seq == 1 { // the writer laps the reader
			for i := uint64(2001); i <= 3500; i++ {
				mustAppend(t, l, "s", []byte(seqPayload(i)))
			}
		}
		n++
	}
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("slow reader: %v after %d events, want ErrTruncated", err, n)
	}
	if n != chunkEvents {
		t.Errorf("read %d events before the error, want one chunk (%d)", n, chunkEvents)
	}
}

func TestRetentionByAge(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	t0 := clock.Now()
	opts := Options{MaxAge: time.Hour, Now: clock.Now}
	l, path := open(t, opts)
	for i := uint64(1); i <= 5; i++ {
		mustAppend(t, l, "s", []byte(seqPayload(i)))
	}
	clock.Advance(30 * time.Minute)
	for i := uint64(6); i <= 10; i++ {
		mustAppend(t, l, "s", []byte(seqPayload(i)))
	}
	mustAppend(t, l, "young", []byte("y"))
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := l.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	expectBounds(t, l, "s", 1, 10) // nothing old enough yet

	clock.Advance(45 * time.Minute) // first five are 75 minutes old
	if err := l.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	expectBounds(t, l, "s", 6, 10)
	if _, err := readAll(l, "s", 0); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Read after 0: %v, want ErrTruncated", err)
	}
	evs, err := readAll(l, "s", 5)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 6, 10, seqPayload)
	if want := t0.Add(30 * time.Minute); !evs[0].Time.Equal(want) {
		t.Errorf("event time %v, want %v", evs[0].Time, want)
	}
	if n := diskEvents(t, l, "s"); n != 5 {
		t.Errorf("%d events on disk, want 5", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// On Open, everything is now too old; seqs go on.
	clock.Advance(2 * time.Hour)
	l = reopen(t, path, opts)
	expectBounds(t, l, "s", 11, 10)
	expectBounds(t, l, "young", 2, 1)
	if evs, err := readAll(l, "s", 10); err != nil || len(evs) != 0 {
		t.Fatalf("Read after 10 = %d events, %v", len(evs), err)
	}
	if seq := mustAppend(t, l, "s", []byte(seqPayload(11))); seq != 11 {
		t.Fatalf("seq after expiry = %d, want 11", seq)
	}
}

func expectBounds(t testing.TB, l *Bolt, session string, first, last uint64) {
	t.Helper()
	f, err := l.First(session)
	if err != nil {
		t.Fatal(err)
	}
	g, err := l.Last(session)
	if err != nil {
		t.Fatal(err)
	}
	if f != first || g != last {
		t.Fatalf("%s: First, Last = %d, %d; want %d, %d", session, f, g, first, last)
	}
}
