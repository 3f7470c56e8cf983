package eventlog

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Bounds of a run the commit packs from records appended separately:
// enough events that bbolt's per-key cost is spread over many, few enough
// bytes that packing them stays cheap. The records of one append are one
// run as they are, whatever their number.
const (
	packEvents = 512
	packBytes  = 64 << 10
)

// runKey is the key of the value holding events first..last.
func runKey(first, last uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, last)
	binary.BigEndian.PutUint64(k[8:], first)
	return k
}

// keyRange returns the seqs a key's value holds.
func keyRange(k []byte) (first, last uint64, err error) {
	switch len(k) {
	case 8:
		seq := binary.BigEndian.Uint64(k)
		return seq, seq, nil
	case 16:
		first, last = binary.BigEndian.Uint64(k[8:]), binary.BigEndian.Uint64(k)
		if first <= last {
			return first, last, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: event key %x", ErrCorrupt, k)
}

// eachStored calls fn with every event of the value v stored under k, in
// order, until fn returns false. Payloads alias v.
func eachStored(k, v []byte, fn func(seq uint64, t int64, payload []byte) bool) error {
	first, last, err := keyRange(k)
	if err != nil {
		return err
	}
	if len(k) == 8 {
		if len(v) < 8 {
			return fmt.Errorf("%w: event %d has a %d-byte value", ErrCorrupt, first, len(v))
		}
		fn(first, int64(binary.BigEndian.Uint64(v)), v[8:len(v):len(v)])
		return nil
	}
	for want := first; ; want++ {
		if len(v) < recordHeader {
			return fmt.Errorf("%w: value of events %d..%d ends before event %d", ErrCorrupt, first, last, want)
		}
		n := int(binary.BigEndian.Uint32(v[16:20]))
		r := record(v)
		if r.seq() != want || n > len(v)-recordHeader {
			return fmt.Errorf("%w: value of events %d..%d: bad record for event %d", ErrCorrupt, first, last, want)
		}
		r = r[:recordHeader+n]
		if !fn(want, r.time(), r.payload()) {
			return nil
		}
		v = v[len(r):]
		if want == last {
			break
		}
	}
	if len(v) != 0 {
		return fmt.Errorf("%w: value of events %d..%d has %d bytes too many", ErrCorrupt, first, last, len(v))
	}
	return nil
}

// putEvents writes the records from seq first on (they follow each other)
// in runs: the records of one append as they are, others packed.
func putEvents(evb *bolt.Bucket, recs []record, first uint64) error {
	for len(recs) > 0 && recs[0].seq() < first {
		recs = recs[1:] // already dropped by retention
	}
	for len(recs) > 0 {
		n, size, whole := nextRun(recs)
		var v []byte
		if whole {
			v = recs[0][:size]
		} else {
			v = make([]byte, 0, size)
			for _, r := range recs[:n] {
				v = append(v, r...)
			}
		}
		// bbolt keeps the key and value slices until the commit: records
		// are immutable, so it may have them as they are.
		if err := putRun(evb, runKey(recs[0].seq(), recs[n-1].seq()), v); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

// runBucketMin is the size from which a run gets a bucket of its own (see
// the storage layout): a quarter of a page, below which bbolt would keep
// such a bucket inside its parent's leaf anyway.
const runBucketMin = 1024

// putRun stores the run v under key k.
func putRun(evb *bolt.Bucket, k, v []byte) error {
	if len(v) < runBucketMin {
		return evb.Put(k, v)
	}
	b, err := evb.CreateBucket(k)
	if err != nil {
		return err
	}
	return b.Put(keyRun, v)
}

// runValue returns the run stored under k, whose value in the events
// bucket is v: nil when the run has a bucket of its own.
func runValue(evb *bolt.Bucket, k, v []byte) ([]byte, error) {
	if v != nil {
		return v, nil
	}
	if b := evb.Bucket(k); b != nil {
		if v := b.Get(keyRun); v != nil {
			return v, nil
		}
	}
	return nil, fmt.Errorf("%w: event key %x has no run", ErrCorrupt, k)
}

// deleteRun deletes the run under k, where c stands, whose value in the
// events bucket is v. c must be moved again before it is used.
func deleteRun(evb *bolt.Bucket, c *bolt.Cursor, k, v []byte) error {
	if v != nil {
		return c.Delete()
	}
	return evb.DeleteBucket(bytes.Clone(k))
}

// nextRun returns how many of the first records one value holds, its
// size, and whether they lie back to back in memory already, so the value
// is theirs as it is: a stretch of records of one append, when it is long
// enough to be worth a value of its own. Otherwise it packs up to
// packEvents records and packBytes bytes (at least one), to be copied
// together, stopping before such a stretch.
func nextRun(recs []record) (n, size int, whole bool) {
	if n, size = stretch(recs); n >= packEvents/8 || size >= packBytes/8 {
		return n, size, true
	}
	n, size = 1, len(recs[0])
	for n < len(recs) && n < packEvents && size+len(recs[n]) <= packBytes &&
		recs[n].seq() == recs[n-1].seq()+1 { // a gap (Skip) ends a run
		if m, sz := stretch(recs[n:]); m >= packEvents/8 || sz >= packBytes/8 {
			break
		}
		size += len(recs[n])
		n++
	}
	return n, size, n == 1
}

// stretch returns how many of the first records lie back to back in
// memory (at least one), and their size.
func stretch(recs []record) (n, size int) {
	n, size = 1, len(recs[0])
	for n < len(recs) && contiguous(recs[n-1], recs[n]) {
		size += len(recs[n])
		n++
	}
	return n, size
}

// dropBefore deletes the events with seqs below to: the values holding
// only such events, and those events from the value holding to, which is
// stored again without them.
func dropBefore(evb *bolt.Bucket, to uint64) error {
	c := evb.Cursor()
	for k, v := c.First(); k != nil; k, v = c.First() {
		first, last, err := keyRange(k)
		if err != nil {
			return err
		}
		if first >= to {
			return nil
		}
		if last < to {
			if err := deleteRun(evb, c, k, v); err != nil {
				return err
			}
			continue
		}
		run, err := runValue(evb, k, v)
		if err != nil {
			return err
		}
		var kept []record
		err = eachStored(k, run, func(seq uint64, t int64, payload []byte) bool {
			if seq >= to {
				kept = append(kept, newStoredRecord(seq, t, payload))
			}
			return true
		})
		if err != nil {
			return err
		}
		if err := deleteRun(evb, c, k, v); err != nil {
			return err
		}
		return putEvents(evb, kept, to)
	}
	return nil
}

// expire deletes the events from seq from on whose time is before cutoff,
// stopping at the first that is not, and returns the seq after the last
// deleted one (from when none was). Times never go back within a session,
// so the expired events are a prefix.
func expire(evb *bolt.Bucket, from uint64, cutoff int64) (uint64, error) {
	cut := from
	done := false
	c := evb.Cursor()
	for k, v := c.Seek(seqKey(from)); k != nil && !done; k, v = c.Next() {
		run, err := runValue(evb, k, v)
		if err != nil {
			return from, err
		}
		err = eachStored(k, run, func(seq uint64, t int64, _ []byte) bool {
			if seq < from {
				return true
			}
			if t >= cutoff {
				done = true
				return false
			}
			cut = seq + 1
			return true
		})
		if err != nil {
			return from, err
		}
	}
	return cut, dropBefore(evb, cut)
}

// lastStoredTime is the time of the last event of the run under k, whose
// value in the events bucket is v.
func lastStoredTime(evb *bolt.Bucket, k, v []byte) (int64, error) {
	run, err := runValue(evb, k, v)
	if err != nil {
		return 0, err
	}
	var last int64
	err = eachStored(k, run, func(_ uint64, t int64, _ []byte) bool {
		last = t
		return true
	})
	return last, err
}
