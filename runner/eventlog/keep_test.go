package eventlog

import (
	"context"
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// keptOf returns how many committed records of session the log keeps in
// memory, and their size.
func keptOf(l *Bolt, session string) (int, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sessions[session]
	return s.kept, s.keptBytes
}

// eraseDisk deletes every stored event of session from the file, so that
// only memory can still serve them.
func eraseDisk(t *testing.T, l *Bolt, session string) {
	t.Helper()
	err := l.db.Update(func(tx *bolt.Tx) error {
		evb := eventsBucket(tx.Bucket(bucketSessions), session)
		c := evb.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Committed events stay in memory until a reader has taken them there;
// the next commit drops those, and the flusher drops the rest soon after.
func TestCommittedEventsKeptForReaders(t *testing.T) {
	ctx := context.Background()
	l, _ := open(t, Options{FlushInterval: time.Hour})
	appendSeqs(t, l, "s", 1, 2, 3)
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	eraseDisk(t, l, "s")
	if n, _ := keptOf(l, "s"); n != 3 {
		t.Fatalf("%d events kept after the commit, want 3", n)
	}
	// Served from memory: the file no longer has them.
	var got []uint64
	for ev, err := range l.Read(ctx, "s", 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Seq)
	}
	if len(got) != 3 || got[2] != 3 {
		t.Fatalf("read %v, want 1..3", got)
	}
	// Read, they go with the next commit.
	appendSeqs(t, l, "s", 4)
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	eraseDisk(t, l, "s")
	if n, _ := keptOf(l, "s"); n != 1 {
		t.Fatalf("%d events kept after a reader took 1..3 and 4 was committed, want 1", n)
	}
	if evs, err := readAll(l, "s", 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of events no longer kept nor stored: %d events, %v; want ErrCorrupt", len(evs), err)
	}
	if evs, err := readAll(l, "s", 3); err != nil || len(evs) != 1 || evs[0].Seq != 4 {
		t.Fatalf("read after 3: %v, %v", evs, err)
	}
	// Nobody reads 4: the flusher drops it all the same.
	deadline := time.Now().Add(10 * time.Second)
	for n, _ := keptOf(l, "s"); n != 0; n, _ = keptOf(l, "s") {
		if time.Now().After(deadline) {
			t.Fatalf("%d events still kept", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := readAll(l, "s", 3); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of a dropped event erased from the file: %v, want ErrCorrupt", err)
	}
}

// Every keepFor the flusher drops what it had kept already the time
// before: a record stays between one and two of those periods.
func TestKeptEventsAge(t *testing.T) {
	ctx := context.Background()
	l, _ := open(t, Options{FlushInterval: time.Hour, keepFor: time.Hour})
	drop := func() {
		l.mu.Lock()
		l.dropOldKept()
		l.mu.Unlock()
	}
	appendSeqs(t, l, "s", 1, 2)
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	drop() // 1 and 2 are marked
	appendSeqs(t, l, "s", 3)
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := keptOf(l, "s"); n != 3 {
		t.Fatalf("%d events kept, want 3", n)
	}
	drop() // 1 and 2 go, 3 is marked
	if n, _ := keptOf(l, "s"); n != 1 {
		t.Fatalf("%d events kept after a second period, want 1", n)
	}
	drop()
	if n, _ := keptOf(l, "s"); n != 0 {
		t.Fatalf("%d events kept after a third period, want 0", n)
	}
	// A session kept again starts afresh.
	appendSeqs(t, l, "s", 4)
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	drop()
	if n, _ := keptOf(l, "s"); n != 1 {
		t.Fatalf("%d events kept after one period, want 1", n)
	}
	if evs, err := readAll(l, "s", 0); err != nil || len(evs) != 4 {
		t.Fatalf("read %d events, %v; want 4", len(evs), err)
	}
}

// What the log keeps is bounded, per session and in all (by
// MaxPendingBytes): the oldest committed events of a session go first.
func TestKeptEventsBounded(t *testing.T) {
	for _, c := range []struct {
		name       string
		maxPending int64
		limit      int64
	}{
		{"per session", 0, keepSessionBytes},
		{"in all", 1 << 20, 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			l, _ := open(t, Options{FlushInterval: time.Hour, MaxPendingBytes: c.maxPending})
			payload := make([]byte, 64<<10)
			batch := make([][]byte, 2*int(c.limit)/len(payload))
			for i := range batch {
				batch[i] = payload
			}
			for _, session := range []string{"a", "b"} {
				if _, err := l.AppendBatch(ctx, session, batch); err != nil {
					t.Fatal(err)
				}
				if err := l.Sync(ctx); err != nil {
					t.Fatal(err)
				}
			}
			na, a := keptOf(l, "a")
			nb, b := keptOf(l, "b")
			if a > c.limit || b > c.limit || na+nb == 0 || c.maxPending > 0 && a+b > c.limit {
				t.Fatalf("kept %d events, %d bytes of a and %d events, %d bytes of b; want some, at most %d bytes", na, a, nb, b, c.limit)
			}
			for _, session := range []string{"a", "b"} {
				if evs, err := readAll(l, session, 0); err != nil || len(evs) != len(batch) {
					t.Fatalf("read %d events of %s, %v; want %d", len(evs), session, err, len(batch))
				}
			}
		})
	}
}
