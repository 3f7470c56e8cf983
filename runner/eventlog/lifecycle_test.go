package eventlog

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// diskEvents counts the events of session committed to the file.
func diskEvents(t testing.TB, l *Bolt, session string) int {
	t.Helper()
	n := 0
	err := l.db.View(func(tx *bolt.Tx) error {
		evb := eventsBucket(tx.Bucket(bucketSessions), session)
		if evb == nil {
			return nil
		}
		return evb.ForEach(func(k, v []byte) error {
			run, err := runValue(evb, k, v)
			if err != nil {
				return err
			}
			return eachStored(k, run, func(uint64, int64, []byte) bool { n++; return true })
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMeta(t *testing.T) {
	l, path := open(t, Options{})
	if _, err := l.Meta("s"); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("Meta of unknown session: %v", err)
	}
	if err := l.SetMeta("s", []byte(`{"cwd":"/w"}`)); err != nil {
		t.Fatal(err)
	}
	if err := l.SetMeta("s", []byte(`{"cwd":"/work","cli":"abc"}`)); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, "events-only", []byte("x"))
	check := func(l *Bolt) {
		t.Helper()
		if m, err := l.Meta("s"); err != nil || string(m) != `{"cwd":"/work","cli":"abc"}` {
			t.Fatalf("Meta = %q, %v", m, err)
		}
		if m, err := l.Meta("events-only"); err != nil || m != nil {
			t.Fatalf("Meta of a session without meta = %q, %v; want nil, nil", m, err)
		}
		if names, _ := l.Sessions(); !slices.Equal(names, []string{"events-only", "s"}) {
			t.Fatalf("Sessions = %v", names)
		}
		expectBounds(t, l, "s", 1, 0)
	}
	check(l)
	m, _ := l.Meta("s")
	m[0] = 'X' // the caller's copy
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check(reopen(t, path, Options{}))
}

func TestDelete(t *testing.T) {
	l, path := open(t, Options{FlushInterval: time.Hour})
	for i := uint64(1); i <= 3; i++ {
		mustAppend(t, l, "a", []byte(seqPayload(i)))
		mustAppend(t, l, "b", []byte(seqPayload(i)))
	}
	if err := l.SetMeta("a", []byte("meta")); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, "a", []byte(seqPayload(4))) // pending, never committed
	if err := l.Delete("a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Sync(ctx); err != nil { // nothing of a's is left to wait for
		t.Fatalf("Sync after Delete: %v", err)
	}
	if names, _ := l.Sessions(); !slices.Equal(names, []string{"b"}) {
		t.Fatalf("Sessions = %v", names)
	}
	if _, err := l.Meta("a"); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("Meta of deleted session: %v", err)
	}
	expectBounds(t, l, "a", 1, 0)
	if evs, err := readAll(l, "a", 0); err != nil || len(evs) != 0 {
		t.Fatalf("Read of deleted session = %d events, %v", len(evs), err)
	}
	if _, err := readAll(l, "a", 3); !errors.Is(err, ErrAhead) {
		t.Fatalf("Read of deleted session after 3: %v, want ErrAhead", err)
	}
	if err := l.Delete("a"); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("second Delete: %v", err)
	}
	if seq := mustAppend(t, l, "a", []byte("new")); seq != 1 {
		t.Fatalf("Append after Delete = %d, want 1", seq)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = reopen(t, path, Options{})
	evs, err := readAll(l, "a", 0)
	if err != nil || len(evs) != 1 || string(evs[0].Payload) != "new" {
		t.Fatalf("a after reopen = %v, %v", evs, err)
	}
	if m, err := l.Meta("a"); err != nil || m != nil {
		t.Fatalf("Meta of recreated session = %q, %v", m, err)
	}
	evs, err = readAll(l, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 1, 3, seqPayload)
}

func TestDeleteWhileReading(t *testing.T) {
	l, _ := open(t, Options{})
	for i := uint64(1); i <= 3000; i++ {
		mustAppend(t, l, "s", []byte(seqPayload(i)))
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var err error
	n := 0
	for _, e := range l.Read(context.Background(), "s", 0) {
		if e != nil {
			err = e
			break
		}
		if n++; n == 1 {
			if err := l.Delete("s"); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l, "s", []byte("reborn"))
		}
	}
	if !errors.Is(err, ErrUnknownSession) || n != chunkEvents {
		t.Fatalf("read %d events then %v; want %d then ErrUnknownSession", n, err, chunkEvents)
	}
}

func TestCloseIsIdempotentAndEverythingAfterFails(t *testing.T) {
	ctx := context.Background()
	l, path := open(t, Options{FlushInterval: time.Hour})
	for i := uint64(1); i <= 100; i++ {
		mustAppend(t, l, "s", []byte(seqPayload(i)))
	}
	if err := l.Close(); err != nil { // commits the pending appends
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	checks := map[string]error{}
	_, checks["Append"] = l.Append(ctx, "s", []byte("x"))
	_, checks["AppendBatch"] = l.AppendBatch(ctx, "s", [][]byte{[]byte("x")})
	checks["Sync"] = l.Sync(ctx)
	_, checks["Read"] = readAll(l, "s", 0)
	_, checks["Last"] = l.Last("s")
	_, checks["First"] = l.First("s")
	_, checks["Meta"] = l.Meta("s")
	checks["SetMeta"] = l.SetMeta("s", nil)
	checks["Delete"] = l.Delete("s")
	_, checks["Sessions"] = l.Sessions()
	checks["Compact"] = l.Compact(ctx)
	for op, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", op, err)
		}
	}
	l = reopen(t, path, Options{})
	evs, err := readAll(l, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 1, 100, seqPayload)
}

func TestBackpressure(t *testing.T) {
	const payload = 1024
	l, _ := open(t, Options{MaxPendingBytes: 10 * (recordHeader + payload + eventOverhead)})
	p := make([]byte, payload)

	// hold keeps the flusher from committing; a test that fails while
	// it holds lets go, so that the log's Close in the cleanup returns.
	held := false
	hold := func(on bool) {
		if on {
			l.writeMu.Lock()
		} else {
			l.writeMu.Unlock()
		}
		held = on
	}
	t.Cleanup(func() {
		if held {
			hold(false)
		}
	})
	hold(true)
	for range 10 {
		mustAppend(t, l, "s", p)
	}
	start := time.Now() // before the deadline is set: it counts from there
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := l.Append(ctx, "s", p)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append over the budget: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("Append returned after %v, before its deadline", d)
	}
	if last, _ := l.Last("s"); last != 10 {
		t.Fatalf("Last = %d after a cancelled Append, want 10", last)
	}

	// A waiting Append proceeds once the flusher commits.
	got := make(chan uint64)
	go func() {
		seq, err := l.Append(context.Background(), "s", p)
		if err != nil {
			t.Error(err)
		}
		got <- seq
	}()
	select {
	case seq := <-got:
		t.Fatalf("Append got seq %d while the budget was full", seq)
	case <-time.After(50 * time.Millisecond):
	}
	hold(false)
	if seq := <-got; seq != 11 {
		t.Fatalf("seq = %d, want 11", seq)
	}

	// A waiting Append fails with ErrClosed when the log is closed.
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	hold(true)
	for range 10 {
		mustAppend(t, l, "s", p)
	}
	errc := make(chan error)
	go func() {
		_, err := l.Append(context.Background(), "s", p)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	closed := make(chan error)
	go func() { closed <- l.Close() }()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("waiting Append at Close: %v, want ErrClosed", err)
	}
	hold(false)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

func TestCommitFailureIsReportedAndRetried(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	boom := errors.New("disk on fire")
	opts := Options{FlushInterval: time.Millisecond, commitHook: func() error {
		if failing.Load() {
			return boom
		}
		return nil
	}}
	l, path := open(t, opts)
	for i := uint64(1); i <= 5; i++ {
		mustAppend(t, l, "s", []byte(seqPayload(i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Sync(ctx); !errors.Is(err, boom) {
		t.Fatalf("Sync while commits fail: %v, want %v", err, boom)
	}
	evs, err := readAll(l, "s", 0) // still readable from memory
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 1, 5, seqPayload)
	failing.Store(false)
	mustAppend(t, l, "s", []byte(seqPayload(6)))
	if err := l.Sync(ctx); err != nil {
		t.Fatalf("Sync after recovery: %v", err)
	}
	if n := diskEvents(t, l, "s"); n != 6 {
		t.Fatalf("%d events on disk, want 6", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = reopen(t, path, Options{})
	evs, err = readAll(l, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 1, 6, seqPayload)
}

func TestOpenLockedFileFailsWithinTimeout(t *testing.T) {
	_, path := open(t, Options{})
	start := time.Now()
	l2, err := Open(path, Options{LockTimeout: 100 * time.Millisecond})
	if err == nil {
		l2.Close()
		t.Fatal("second Open of a held file succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("second Open took %v", d)
	}
	t.Log(err)
}

func TestOpenCorruptFile(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(garbage, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of garbage: %v, want ErrCorrupt", err)
	} else {
		t.Log(err)
	}

	foreign := filepath.Join(dir, "foreign.db")
	db, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(foreign, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a foreign bbolt file: %v, want ErrCorrupt", err)
	}

	if _, err := Open(filepath.Join(dir, "missing", "x.db"), Options{}); err == nil {
		t.Fatal("Open in a missing directory succeeded")
	}
}

func TestReadErrors(t *testing.T) {
	l, _ := open(t, Options{})
	for i := uint64(1); i <= 3000; i++ {
		mustAppend(t, l, "s", []byte(seqPayload(i)))
	}
	toDisk(t, l) // chunks are full
	if _, err := readAll(l, "s", 3001); !errors.Is(err, ErrAhead) {
		t.Errorf("Read after Last: %v, want ErrAhead", err)
	}
	if _, err := readAll(l, "", 0); !errors.Is(err, ErrInvalidSession) {
		t.Errorf("Read of empty name: %v", err)
	}
	if evs, err := readAll(l, "s", 3000); err != nil || len(evs) != 0 {
		t.Errorf("Read at Last = %d events, %v", len(evs), err)
	}

	// Cancelled midway: stops at a chunk boundary.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var err error
	for _, e := range l.Read(ctx, "s", 0) {
		if e != nil {
			err = e
			break
		}
		n++
		cancel()
	}
	if !errors.Is(err, context.Canceled) || n != chunkEvents {
		t.Errorf("cancelled Read: %d events then %v", n, err)
	}

	// Breaking out early, then reading again from the same iterator.
	seq := l.Read(context.Background(), "s", 10)
	for ev := range seq {
		if ev.Seq != 11 {
			t.Fatalf("first event %d, want 11", ev.Seq)
		}
		break
	}
	count := 0
	for range seq {
		count++
	}
	if count != 2990 {
		t.Errorf("second iteration yielded %d, want 2990", count)
	}
}

// An append copies its payloads: the caller may reuse its buffers.
func TestAppendCopiesPayloads(t *testing.T) {
	l, _ := open(t, Options{FlushInterval: time.Hour})
	in := []byte("hello")
	mustAppend(t, l, "s", in)
	mustAppend(t, l, "s", nil)
	mustAppend(t, l, "s", []byte{})
	in[0] = 'J'
	check := func(where string) {
		t.Helper()
		evs, err := readAll(l, "s", 0)
		if err != nil {
			t.Fatal(err)
		}
		if string(evs[0].Payload) != "hello" || evs[1].Payload != nil || evs[2].Payload != nil {
			t.Fatalf("%s: payloads %q", where, [][]byte{evs[0].Payload, evs[1].Payload, evs[2].Payload})
		}
	}
	check("from memory")
	check("from memory again")
	toDisk(t, l)
	check("from disk")
	check("from disk again")
}

// Read's payloads are shared, each capped at its own length: an append to
// one does not reach the events next to it.
func TestReadPayloadsAreCapped(t *testing.T) {
	ctx := context.Background()
	l, _ := open(t, Options{FlushInterval: time.Hour})
	if _, err := l.AppendBatch(ctx, "s", [][]byte{[]byte("one"), nil, []byte("three")}); err != nil {
		t.Fatal(err)
	}
	check := func(where string) {
		t.Helper()
		var got [][]byte
		for ev, err := range l.Read(ctx, "s", 0) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ev.Payload)
		}
		if len(got) != 3 || string(got[0]) != "one" || got[1] != nil || string(got[2]) != "three" {
			t.Fatalf("%s: payloads %q", where, got)
		}
		_ = append(got[0], "XXXXXXXX"...)
		if string(got[2]) != "three" {
			t.Fatalf("%s: an append to a shared payload reached the next one: %q", where, got[2])
		}
		evs, err := readAll(l, "s", 0)
		if err != nil || string(evs[0].Payload) != "one" || string(evs[2].Payload) != "three" {
			t.Fatalf("%s: after an append to a shared payload: %v %q", where, err, [][]byte{evs[0].Payload, evs[2].Payload})
		}
	}
	check("from memory")
	toDisk(t, l)
	check("from disk")
}

// TestChaos mixes every operation on a few sessions, with a small
// retention, and checks that each Read is contiguous and fails only in
// the documented ways.
func TestChaos(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l, path := open(t, Options{MaxEventsPerSession: 300, MaxAge: time.Minute, Now: clock.Now, FlushInterval: 500 * time.Microsecond, MaxPendingBytes: 64 << 10})
	ctx := context.Background()
	sessions := []string{"a", "b", "c"}
	deadline := time.Now().Add(1500 * time.Millisecond)
	var wg sync.WaitGroup
	var appended atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				s := sessions[(w+i)%len(sessions)]
				if i%7 == 0 {
					ps := [][]byte{make([]byte, 100), make([]byte, 2000), nil}
					if _, err := l.AppendBatch(ctx, s, ps); err != nil {
						t.Error(err)
						return
					}
				} else if _, err := l.Append(ctx, s, make([]byte, i%3000)); err != nil {
					t.Error(err)
					return
				}
				appended.Add(1)
			}
		})
	}
	for r := range 3 {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				s := sessions[(r+i)%len(sessions)]
				first, _ := l.First(s)
				var prev uint64
				for ev, err := range l.Read(ctx, s, first-1) {
					if err != nil {
						if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrUnknownSession) && !errors.Is(err, ErrAhead) {
							t.Errorf("Read(%s): %v", s, err)
						}
						break
					}
					if prev != 0 && ev.Seq != prev+1 {
						t.Errorf("Read(%s): seq %d after %d", s, ev.Seq, prev)
						return
					}
					prev = ev.Seq
				}
			}
		})
	}
	wg.Go(func() {
		for i := 0; time.Now().Before(deadline); i++ {
			time.Sleep(time.Millisecond)
			switch i % 50 {
			case 10:
				if err := l.Delete(sessions[i%len(sessions)]); err != nil && !errors.Is(err, ErrUnknownSession) {
					t.Error(err)
				}
			case 20:
				clock.Advance(20 * time.Second)
				if err := l.Compact(ctx); err != nil {
					t.Error(err)
				}
			case 30:
				if err := l.SetMeta(sessions[i%len(sessions)], []byte("m")); err != nil {
					t.Error(err)
				}
			default:
				if err := l.Sync(ctx); err != nil {
					t.Error(err)
				}
			}
		}
	})
	wg.Wait()
	want := map[string][2]uint64{}
	for _, s := range sessions {
		first, _ := l.First(s)
		last, _ := l.Last(s)
		want[s] = [2]uint64{first, last}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d appends", appended.Load())
	l = reopen(t, path, Options{MaxEventsPerSession: 300})
	for _, s := range sessions {
		expectBounds(t, l, s, want[s][0], want[s][1])
		evs, err := readAll(l, s, want[s][0]-1)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > 0 {
			checkRange(t, evs, want[s][0], want[s][1], nil)
		}
	}
}
