package eventlog

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// seqsOf lists the seqs Read yields after `after`, failing on an error.
func seqsOf(t *testing.T, l *Bolt, session string, after uint64) []uint64 {
	t.Helper()
	evs, err := readAll(l, session, after)
	if err != nil {
		t.Fatalf("Read after %d: %v", after, err)
	}
	var seqs []uint64
	for _, ev := range evs {
		if string(ev.Payload) != seqPayload(ev.Seq) {
			t.Fatalf("event %d: payload %q", ev.Seq, ev.Payload)
		}
		seqs = append(seqs, ev.Seq)
	}
	return seqs
}

func appendSeqs(t *testing.T, l *Bolt, session string, seqs ...uint64) {
	t.Helper()
	for _, want := range seqs {
		if got := mustAppend(t, l, session, []byte(seqPayload(want))); got != want {
			t.Fatalf("Append got seq %d, want %d", got, want)
		}
	}
}

// Skip numbers on after the seq given; Read passes over the gap, from
// memory, from disk and after a reopen; a Skip below the last seq does
// nothing.
func TestSkipLeavesAGapReadsPassOver(t *testing.T) {
	l, path := open(t, Options{FlushInterval: time.Hour}) // everything stays in memory until Sync
	appendSeqs(t, l, "s", 1, 2, 3)
	if err := l.Skip("s", 6); err != nil {
		t.Fatal(err)
	}
	if err := l.Skip("s", 9); err != nil { // grows the same gap
		t.Fatal(err)
	}
	appendSeqs(t, l, "s", 10, 11)
	if err := l.Skip("s", 13); err != nil {
		t.Fatal(err)
	}
	appendSeqs(t, l, "s", 14)
	if err := l.Skip("s", 2); err != nil { // behind: nothing to do
		t.Fatal(err)
	}
	check := func(l *Bolt, where string) {
		t.Helper()
		expectBounds(t, l, "s", 1, 14)
		for after, want := range map[uint64][]uint64{
			0: {1, 2, 3, 10, 11, 14}, 2: {3, 10, 11, 14}, 3: {10, 11, 14}, 5: {10, 11, 14},
			9: {10, 11, 14}, 11: {14}, 12: {14}, 13: {14}, 14: nil,
		} {
			if got := seqsOf(t, l, "s", after); !slices.Equal(got, want) {
				t.Fatalf("%s: read after %d = %v, want %v", where, after, got, want)
			}
		}
		if _, err := readAll(l, "s", 15); !errors.Is(err, ErrAhead) {
			t.Fatalf("%s: read past the end: %v, want ErrAhead", where, err)
		}
	}
	check(l, "memory")
	toDisk(t, l)
	check(l, "disk")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = reopen(t, path, Options{})
	check(l, "reopened")
	appendSeqs(t, l, "s", 15)
	if err := l.Skip("s", 20); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil { // the gap alone is committed too
		t.Fatal(err)
	}
	l = reopen(t, path, Options{})
	expectBounds(t, l, "s", 1, 20)
	appendSeqs(t, l, "s", 21)
	if got := seqsOf(t, l, "s", 14); !slices.Equal(got, []uint64{15, 21}) {
		t.Fatalf("after a gap at the end: %v", got)
	}
}

// A missing event that no gap explains is still corruption.
func TestMissingEventOutsideGapsIsCorrupt(t *testing.T) {
	l, _ := open(t, Options{})
	appendSeqs(t, l, "s", 1, 2, 3)
	if err := l.Skip("s", 5); err != nil {
		t.Fatal(err)
	}
	appendSeqs(t, l, "s", 6)
	toDisk(t, l)
	// Store events 1..3 again without event 2.
	err := l.db.Update(func(tx *bolt.Tx) error {
		evb := eventsBucket(tx.Bucket(bucketSessions), "s")
		k, v := evb.Cursor().Seek(seqKey(1))
		var keep []record
		if err := eachStored(k, v, func(seq uint64, t int64, payload []byte) bool {
			if seq != 2 {
				keep = append(keep, newStoredRecord(seq, t, payload))
			}
			return true
		}); err != nil {
			return err
		}
		if err := evb.Delete(slices.Clone(k)); err != nil {
			return err
		}
		for _, r := range keep {
			if err := evb.Put(runKey(r.seq(), r.seq()), r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := readAll(l, "s", 0)
	if !errors.Is(err, ErrCorrupt) || len(evs) != 1 {
		t.Fatalf("read over a lost event: %d events, %v", len(evs), err)
	}
}

// Skip refuses an unknown session and a gap no crash explains; retention
// counts a gap as seqs and never walks it.
func TestSkipLimits(t *testing.T) {
	l, _ := open(t, Options{MaxPendingBytes: 10 * minEventCharge, MaxEventsPerSession: 4})
	if err := l.Skip("nobody", 5); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("Skip in an unknown session: %v", err)
	}
	appendSeqs(t, l, "s", 1, 2)
	if err := l.Skip("s", 2+12); !errors.Is(err, ErrAhead) {
		t.Fatalf("Skip of 12 with room for 10 pending events: %v", err)
	}
	if err := l.Skip("s", 2+11); err != nil {
		t.Fatalf("Skip of 11: %v", err)
	}
	appendSeqs(t, l, "s", 14, 15)
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	expectBounds(t, l, "s", 12, 15)
	if n := diskEvents(t, l, "s"); n != 2 {
		t.Fatalf("%d events on disk, want 2 (1 and 2 dropped by retention)", n)
	}
	if _, err := readAll(l, "s", 0); !errors.Is(err, ErrTruncated) {
		t.Fatalf("read from 0: %v, want ErrTruncated", err)
	}
	if got := seqsOf(t, l, "s", 11); !slices.Equal(got, []uint64{14, 15}) {
		t.Fatalf("read after 11: %v", got)
	}
}

func diskMeta(t *testing.T, l *Bolt, session string) []byte {
	t.Helper()
	var meta []byte
	err := l.db.View(func(tx *bolt.Tx) error {
		if sb := tx.Bucket(bucketSessions).Bucket([]byte(session)); sb != nil {
			meta = clone(sb.Get(keyMeta))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

// SetMetaAsync is seen at once and written by the next group commit;
// SetMeta supersedes metadata still waiting.
func TestSetMetaAsync(t *testing.T) {
	l, path := open(t, Options{FlushInterval: time.Hour})
	if err := l.SetMetaAsync("s", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if m, err := l.Meta("s"); err != nil || string(m) != "one" {
		t.Fatalf("Meta = %q, %v", m, err)
	}
	if names, _ := l.Sessions(); !slices.Equal(names, []string{"s"}) {
		t.Fatalf("Sessions = %v", names)
	}
	if m := diskMeta(t, l, "s"); m != nil {
		t.Fatalf("on disk before a commit: %q", m)
	}
	appendSeqs(t, l, "s", 1)
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := diskMeta(t, l, "s"); string(m) != "one" {
		t.Fatalf("on disk after Sync: %q", m)
	}
	if err := l.SetMetaAsync("s", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if err := l.SetMeta("s", []byte("three")); err != nil {
		t.Fatal(err)
	}
	appendSeqs(t, l, "s", 2)
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m, err := l.Meta("s"); err != nil || string(m) != "three" {
		t.Fatalf("Meta after SetMeta = %q, %v", m, err)
	}
	if err := l.SetMetaAsync("s", []byte("four")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = reopen(t, path, Options{})
	if m, err := l.Meta("s"); err != nil || string(m) != "four" {
		t.Fatalf("Meta after reopen = %q, %v", m, err)
	}
}

// A crash loses a new session whole or keeps it whole: metadata set with
// SetMetaAsync and its events go to disk together or not at all. (The
// child exits before its next group commit is due, but a commit already
// under way for the synced session may take the new one along.)
func TestCrashKeepsAsyncMetaWithItsEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childModeEnv+"=async-meta", childPathEnv+"="+path)
	cmd.Stderr = os.Stderr
	if out, err := cmd.Output(); err != nil || string(out) != "synced old\n" {
		t.Fatalf("child: %q, %v", out, err)
	}
	l := reopen(t, path, Options{})
	if m, err := l.Meta("old"); err != nil || string(m) != "old" {
		t.Fatalf("synced session: %q, %v", m, err)
	}
	if got := seqsOf(t, l, "old", 0); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("synced session's events: %v", got)
	}
	m, err := l.Meta("new")
	switch {
	case errors.Is(err, ErrUnknownSession):
		if last, _ := l.Last("new"); last != 0 {
			t.Fatalf("the new session's meta was lost with the crash, and its events up to %d kept", last)
		}
	case err != nil || string(m) != "new":
		t.Fatalf("new session's meta: %q, %v", m, err)
	default: // committed before the exit: with its event
		t.Log("the new session was committed before the exit")
		if got := seqsOf(t, l, "new", 0); !slices.Equal(got, []uint64{1}) {
			t.Fatalf("the new session's meta was kept, and its events %v", got)
		}
	}
}

// asyncMetaChild syncs one session, then starts another and exits
// before any commit could write it.
func asyncMetaChild(path string) int {
	ctx := context.Background()
	l, err := Open(path, Options{FlushInterval: time.Hour})
	if err != nil {
		return 2
	}
	if l.SetMetaAsync("old", []byte("old")) != nil {
		return 2
	}
	if _, err := l.Append(ctx, "old", []byte(seqPayload(1))); err != nil {
		return 2
	}
	if l.Sync(ctx) != nil {
		return 2
	}
	if l.SetMetaAsync("new", []byte("new")) != nil {
		return 2
	}
	if _, err := l.Append(ctx, "new", []byte(seqPayload(1))); err != nil {
		return 2
	}
	os.Stdout.WriteString("synced old\n")
	return 0 // os.Exit without Close
}
