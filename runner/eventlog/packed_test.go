package eventlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// diskKeys counts the values stored for session, and how many hold
// several events.
func diskKeys(t testing.TB, l *Bolt, session string) (keys, packed int) {
	t.Helper()
	err := l.db.View(func(tx *bolt.Tx) error {
		return eventsBucket(tx.Bucket(bucketSessions), session).ForEach(func(k, _ []byte) error {
			keys++
			if first, last, err := keyRange(k); err != nil || first < last {
				packed++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, packed
}

// sizedPayload is seq's payload, of a size that varies with seq: a few
// are larger than a packed value.
func sizedPayload(seq uint64) string {
	n := int(seq % 300)
	if seq%97 == 0 {
		n = packBytes + 10
	}
	return seqPayload(seq) + strings.Repeat("x", n)
}

// A commit packs the events it writes into few values; every event reads
// back the same, from any position, before and after a reopen.
func TestPackedEvents(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	opts := Options{Now: clock.Now, FlushInterval: time.Hour}
	l, path := open(t, opts)
	const total = 3000
	for seq := uint64(1); seq <= total; {
		if seq%1000 < 10 {
			if err := l.Sync(ctx); err != nil { // several commits
				t.Fatal(err)
			}
		}
		// Single appends, packed by the commit, and batches, each a run
		// as it is.
		n := min(1+seq%7*seq%3, total-seq+1)
		batch := make([][]byte, n)
		for i := range batch {
			batch[i] = []byte(sizedPayload(seq + uint64(i)))
		}
		if first, err := l.AppendBatch(ctx, "s", batch); err != nil || first != seq {
			t.Fatalf("AppendBatch at %d: %d, %v", seq, first, err)
		}
		if seq/250 != (seq+n)/250 {
			clock.Advance(time.Second)
		}
		seq += n
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	keys, packed := diskKeys(t, l, "s")
	t.Logf("%d events in %d values, %d of them packed", total, keys, packed)
	if packed == 0 || keys > total/10 {
		t.Fatalf("%d values (%d packed) for %d events", keys, packed, total)
	}
	check := func(l *Bolt) {
		t.Helper()
		for _, after := range []uint64{0, 1, 2, 96, 97, 511, 512, 513, 1000, 2999, 3000} {
			evs, err := readAll(l, "s", after)
			if err != nil {
				t.Fatalf("Read after %d: %v", after, err)
			}
			checkRange(t, evs, after+1, total, sizedPayload)
			for i, ev := range evs {
				if i > 0 && ev.Time.Before(evs[i-1].Time) {
					t.Fatalf("event %d: time %v before the previous one's", ev.Seq, ev.Time)
				}
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = reopen(t, path, opts)
	check(l)
	expectBounds(t, l, "s", 1, total)
	if seq := mustAppend(t, l, "s", []byte(sizedPayload(total+1))); seq != total+1 {
		t.Fatalf("seq after reopen = %d", seq)
	}
}

// Retention that cuts through a packed value keeps exactly the newer
// events, in memory and on disk.
func TestRetentionInsidePackedValue(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	l, path := open(t, Options{Now: clock.Now, FlushInterval: time.Hour})
	for seq := uint64(1); seq <= 100; seq++ {
		if seq == 41 {
			clock.Advance(time.Hour)
		}
		mustAppend(t, l, "s", []byte(seqPayload(seq)))
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, packed := diskKeys(t, l, "s"); keys != 1 || packed != 1 {
		t.Fatalf("%d values (%d packed), want one packed value", keys, packed)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// By age: events 1..40 are an hour older than the rest.
	clock.Advance(30 * time.Minute)
	l = reopen(t, path, Options{Now: clock.Now, MaxAge: time.Hour})
	expectBounds(t, l, "s", 41, 100)
	if n := diskEvents(t, l, "s"); n != 60 {
		t.Fatalf("%d events on disk, want 60", n)
	}
	evs, err := readAll(l, "s", 40)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 41, 100, seqPayload)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// By count.
	l = reopen(t, path, Options{Now: clock.Now, MaxEventsPerSession: 25})
	expectBounds(t, l, "s", 76, 100)
	if n := diskEvents(t, l, "s"); n != 25 {
		t.Fatalf("%d events on disk, want 25", n)
	}
	if evs, err = readAll(l, "s", 75); err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 76, 100, seqPayload)
	if _, err := readAll(l, "s", 70); !errors.Is(err, ErrTruncated) {
		t.Fatalf("Read after 70: %v, want ErrTruncated", err)
	}
}

// A file written before events were packed (format "1") opens, reads and
// grows as before, and is marked format "3".
func TestFormatOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	err = db.Update(func(tx *bolt.Tx) error {
		info, _ := tx.CreateBucket(bucketInfo)
		if err := info.Put(keyFormat, []byte("1")); err != nil {
			return err
		}
		root, _ := tx.CreateBucket(bucketSessions)
		sb, _ := root.CreateBucket([]byte("s"))
		evb, _ := sb.CreateBucket(bucketEvents)
		for seq := uint64(1); seq <= 5; seq++ {
			v := binary.BigEndian.AppendUint64(nil, uint64(t0.Add(time.Duration(seq)*time.Second).UnixNano()))
			if err := evb.Put(seqKey(seq), append(v, seqPayload(seq)...)); err != nil {
				return err
			}
		}
		return evb.SetSequence(5)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	l := reopen(t, path, Options{})
	expectBounds(t, l, "s", 1, 5)
	evs, err := readAll(l, "s", 2)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 3, 5, seqPayload)
	if !evs[0].Time.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("time %v", evs[0].Time)
	}
	if _, err := l.AppendBatch(context.Background(), "s", [][]byte{[]byte(seqPayload(6)), []byte(seqPayload(7))}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = reopen(t, path, Options{})
	evs, err = readAll(l, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 1, 7, seqPayload)
	var format []byte
	_ = l.db.View(func(tx *bolt.Tx) error {
		format = bytes.Clone(tx.Bucket(bucketInfo).Get(keyFormat))
		return nil
	})
	if string(format) != "3" {
		t.Fatalf("format %q after open", format)
	}
}

// A run of runBucketMin bytes or more is a bucket of its own, written
// once: appending more runs after it leaves its pages as they are. A
// smaller run is a value of the events bucket.
func TestLargeRunsHaveBucketsOfTheirOwn(t *testing.T) {
	l, _ := open(t, Options{FlushInterval: time.Hour})
	ctx := context.Background()
	big := make([][]byte, 8)
	for i := range big {
		big[i] = []byte(strings.Repeat("b", 300)) // 8 records: over runBucketMin
	}
	if _, err := l.AppendBatch(ctx, "s", big); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(ctx); err != nil { // else one run holds both appends
		t.Fatal(err)
	}
	if _, err := l.AppendBatch(ctx, "s", [][]byte{[]byte("small")}); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	runPage := func() (pgid uint64, buckets, values int) {
		err := l.db.View(func(tx *bolt.Tx) error {
			evb := eventsBucket(tx.Bucket(bucketSessions), "s")
			return evb.ForEach(func(k, v []byte) error {
				if v != nil {
					values++
					return nil
				}
				buckets++
				if pgid == 0 {
					pgid = uint64(evb.Bucket(k).Root())
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return pgid, buckets, values
	}
	page, buckets, values := runPage()
	if buckets != 1 || values != 1 {
		t.Fatalf("%d runs in buckets and %d as values, want 1 and 1", buckets, values)
	}
	for range 20 {
		if _, err := l.AppendBatch(ctx, "s", big); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if again, buckets, _ := runPage(); again != page || buckets != 21 {
		t.Fatalf("first run at page %d after 20 more commits (was %d), %d runs in buckets", again, page, buckets)
	}
	evs, err := readAll(l, "s", 0)
	if err != nil || len(evs) != 8+1+20*8 {
		t.Fatalf("read %d events, %v", len(evs), err)
	}
	if string(evs[8].Payload) != "small" || string(evs[9].Payload) != string(big[0]) {
		t.Fatalf("events 9, 10: %q, %q", evs[8].Payload, evs[9].Payload)
	}
}

// A format "2" file, whose large runs are values of the events bucket,
// opens and reads as before; retention cuts through such a value and
// through a run of its own bucket alike.
func TestFormatTwoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	payloads := make([][]byte, 50)
	size := 0
	for i := range payloads {
		payloads[i] = []byte(sizedPayload(uint64(i + 1)))
		size += recordHeader + len(payloads[i])
	}
	recs := newRecords(nil, payloads, size)
	for i, r := range recs {
		r.stamp(uint64(i+1), int64(i+1))
	}
	err = db.Update(func(tx *bolt.Tx) error {
		info, _ := tx.CreateBucket(bucketInfo)
		if err := info.Put(keyFormat, []byte("2")); err != nil {
			return err
		}
		root, _ := tx.CreateBucket(bucketSessions)
		sb, _ := root.CreateBucket([]byte("s"))
		evb, _ := sb.CreateBucket(bucketEvents)
		if err := evb.Put(runKey(1, 50), recs[0][:size]); err != nil {
			return err
		}
		return evb.SetSequence(50)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	l := reopen(t, path, Options{})
	expectBounds(t, l, "s", 1, 50)
	more := make([][]byte, 50)
	for i := range more {
		more[i] = []byte(sizedPayload(uint64(51 + i)))
	}
	if _, err := l.AppendBatch(context.Background(), "s", more); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = reopen(t, path, Options{})
	evs, err := readAll(l, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, evs, 1, 100, sizedPayload)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, keep := range []int{75, 20} { // through the value, then through the bucket run
		l = reopen(t, path, Options{MaxEventsPerSession: keep})
		first := uint64(100 - keep + 1)
		expectBounds(t, l, "s", first, 100)
		if n := diskEvents(t, l, "s"); n != keep {
			t.Fatalf("keep %d: %d events on disk", keep, n)
		}
		if evs, err = readAll(l, "s", first-1); err != nil {
			t.Fatal(err)
		}
		checkRange(t, evs, first, 100, sizedPayload)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A damaged value is reported as ErrCorrupt when it is read; the rest of
// the log is as it was.
func TestCorruptPackedValue(t *testing.T) {
	ctx := context.Background()
	l, path := open(t, Options{FlushInterval: time.Hour})
	for seq := uint64(1); seq <= 10; seq++ {
		mustAppend(t, l, "s", []byte(seqPayload(seq)))
	}
	for seq := uint64(1); seq <= packEvents+10; seq++ { // two values
		mustAppend(t, l, "t", []byte(seqPayload(seq)))
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	damage := func(session string, value func(k, v []byte) []byte) {
		t.Helper()
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		err = db.Update(func(tx *bolt.Tx) error {
			evb := eventsBucket(tx.Bucket(bucketSessions), session)
			k, v := evb.Cursor().First()
			if v == nil { // a run of its own bucket
				b := evb.Bucket(k)
				return b.Put(keyRun, value(k, bytes.Clone(b.Get(keyRun))))
			}
			return evb.Put(bytes.Clone(k), value(k, bytes.Clone(v)))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The first value of t claims more bytes than it has: Open does not
	// read it, Read does.
	damage("t", func(k, v []byte) []byte {
		binary.BigEndian.PutUint32(v[16:20], 1<<31)
		return v
	})
	l = reopen(t, path, Options{})
	if _, err := readAll(l, "t", 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read of a damaged value: %v, want ErrCorrupt", err)
	}
	if evs, err := readAll(l, "t", packEvents); err != nil || len(evs) != 10 {
		t.Fatalf("Read past the damaged value: %d events, %v", len(evs), err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The only value of s loses its end: its last event is cut short.
	// The log still opens; reading s says what is wrong.
	damage("s", func(_, v []byte) []byte { return v[:len(v)-3] })
	l = reopen(t, path, Options{})
	if _, err := readAll(l, "s", 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read of a value cut short: %v, want ErrCorrupt", err)
	}
	if evs, err := readAll(l, "t", packEvents); err != nil || len(evs) != 10 {
		t.Fatalf("the other session: %d events, %v", len(evs), err)
	}
}

func FuzzEachStored(f *testing.F) {
	recs := newRecords(nil, [][]byte{[]byte("ab"), nil}, 2*recordHeader+2)
	recs[0].stamp(3, 7)
	recs[1].stamp(4, 8)
	f.Add(runKey(3, 4), append(append([]byte(nil), recs[0]...), recs[1]...))
	f.Add(seqKey(9), []byte("12345678payload"))
	f.Add([]byte{1, 2, 3}, []byte{})
	f.Fuzz(func(t *testing.T, k, v []byte) {
		var seqs []uint64
		err := eachStored(k, v, func(seq uint64, _ int64, payload []byte) bool {
			if cap(payload) != len(payload) {
				t.Fatal("a payload reaches past its end")
			}
			seqs = append(seqs, seq)
			return true
		})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		first, last, _ := keyRange(k)
		if uint64(len(seqs)) != last-first+1 {
			t.Fatalf("%d events for %d..%d", len(seqs), first, last)
		}
	})
}
