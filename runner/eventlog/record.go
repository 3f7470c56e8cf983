package eventlog

import (
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Storage layout (format "3"):
//
//	info/format                 "3"
//	sessions/<name>/meta        the session's metadata
//	sessions/<name>/gaps        seqs skipped (see Skip), pairs of big-endian seqs
//	sessions/<name>/events/     bucket of events, see below; its bucket
//	                            sequence is the highest committed seq
//
// Events are stored in runs of consecutive seqs, one value per run:
//
//	key: last, first (16 bytes)   value: for each of first..last, its record:
//	                              seq (8 bytes), time (8), payload length
//	                              (4), payload
//	key: seq (8 bytes)            value: time (8 bytes), payload; format "1"
//	                              files hold only these, one per event
//
// A run of runBucketMin bytes or more is not a value of the events bucket
// but the only value (key "r") of a bucket of its own, under the same key:
// bbolt keeps at least two keys in a leaf and rewrites a leaf whole when a
// key is added to it, so a large value beside the newest key was written
// again with every run appended after it, about twice in all (format "2").
// A bucket of its own is written once; the events bucket's leaf holds
// only its 16-byte header.
//
// Numbers are big-endian and times Unix nanoseconds. Keys sort by the
// last seq they hold, so a cursor walks the events in seq order and
// Seek(seq) lands on the run holding seq. One Put per run, not per
// event: bbolt's cost is per key. Format "1" and "2" files are format "3"
// files; Open marks them so, which keeps older versions from misreading
// them.

// record is one event as it is stored in a run (see above). Append builds
// the records of one call back to back in one allocation, so a run of
// them is a value as it is, which the commit hands to bbolt without a
// copy; once in a tail a record is never written again. A record's
// capacity reaches to the end of its allocation (see contiguous); its
// payload, handed out, is capped at its own length.
type record []byte

const recordHeader = 20

// newRecords appends to dst a record per payload, all in one allocation
// of size bytes: the records of one append are committed, and so
// dropped from memory, together.
func newRecords(dst []record, payloads [][]byte, size int) []record {
	buf := make([]byte, size)
	for _, p := range payloads {
		n := recordHeader + len(p)
		r := record(buf[:n])
		binary.BigEndian.PutUint32(r[16:20], uint32(len(p)))
		copy(r[recordHeader:], p)
		buf = buf[n:]
		dst = append(dst, r)
	}
	return dst
}

// newStoredRecord makes a record of an event read back from disk (its
// payload is copied).
func newStoredRecord(seq uint64, t int64, payload []byte) record {
	r := newRecords(nil, [][]byte{payload}, recordHeader+len(payload))[0]
	r.stamp(seq, t)
	return r
}

func (r record) seq() uint64     { return binary.BigEndian.Uint64(r) }
func (r record) time() int64     { return int64(binary.BigEndian.Uint64(r[8:16])) }
func (r record) payload() []byte { return r[recordHeader:len(r):len(r)] }

// sharedEvent is the event without a copy of its payload: records are
// never written again, and the payload is capped at its own length, so an
// append to it cannot reach the next record.
func (r record) sharedEvent() Event {
	ev := Event{Seq: r.seq(), Time: time.Unix(0, r.time())}
	if len(r) > recordHeader {
		ev.Payload = r.payload()
	}
	return ev
}

func (r record) stamp(seq uint64, t int64) {
	binary.BigEndian.PutUint64(r[0:8], seq)
	binary.BigEndian.PutUint64(r[8:16], uint64(t))
}

// contiguous reports whether b follows a in the same allocation.
func contiguous(a, b record) bool {
	return len(a) < cap(a) && &a[:len(a)+1][len(a)] == &b[0]
}

var (
	bucketInfo     = []byte("info")
	bucketSessions = []byte("sessions")
	bucketEvents   = []byte("events")
	keyFormat      = []byte("format")
	keyMeta        = []byte("meta")
	keyGaps        = []byte("gaps")
	keyRun         = []byte("r")
	formatVersion  = []byte("3")
	formatV1       = []byte("1")
	formatV2       = []byte("2")
)

func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}

// eventsBucket returns the events bucket of a session, nil if the session
// is not on disk.
func eventsBucket(root *bolt.Bucket, name string) *bolt.Bucket {
	sb := root.Bucket([]byte(name))
	if sb == nil {
		return nil
	}
	return sb.Bucket(bucketEvents)
}

// sessionBucket returns the bucket of a session, creating it and its
// events bucket if needed.
func sessionBucket(root *bolt.Bucket, name string) (*bolt.Bucket, error) {
	sb, err := root.CreateBucketIfNotExists([]byte(name))
	if err != nil {
		return nil, err
	}
	if _, err := sb.CreateBucketIfNotExists(bucketEvents); err != nil {
		return nil, err
	}
	return sb, nil
}
