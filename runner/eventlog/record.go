package eventlog

import (
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Storage layout (format "1"):
//
//	info/format                 "1"
//	sessions/<name>/meta        the session's metadata
//	sessions/<name>/gaps        seqs skipped (see Skip), pairs of big-endian seqs
//	sessions/<name>/events/     bucket: big-endian seq -> record value;
//	                            its bucket sequence is the highest committed seq

// record is one event as it is stored: its key, the big-endian seq, then
// its value, the big-endian Unix-ns time and the payload. Append builds it
// in one allocation and the commit hands both parts to bbolt as they are;
// once in a tail it is never written again.
type record []byte

const recordHeader = 16

func newRecord(payload []byte) record {
	r := make(record, recordHeader+len(payload))
	copy(r[recordHeader:], payload)
	return r
}

func (r record) seq() uint64   { return binary.BigEndian.Uint64(r) }
func (r record) key() []byte   { return r[:8:8] }
func (r record) value() []byte { return r[8:] }
func (r record) event() Event  { return decodeEvent(r.seq(), r.value()) }
func (r record) stamp(seq uint64, t int64) {
	binary.BigEndian.PutUint64(r[0:8], seq)
	binary.BigEndian.PutUint64(r[8:16], uint64(t))
}

// decodeEvent decodes a stored value; the payload is copied.
func decodeEvent(seq uint64, v []byte) Event {
	return Event{Seq: seq, Time: time.Unix(0, int64(binary.BigEndian.Uint64(v))), Payload: clone(v[8:])}
}

var (
	bucketInfo     = []byte("info")
	bucketSessions = []byte("sessions")
	bucketEvents   = []byte("events")
	keyFormat      = []byte("format")
	keyMeta        = []byte("meta")
	keyGaps        = []byte("gaps")
	formatVersion  = []byte("1")
)

func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}

func seqOf(k []byte) uint64 { return binary.BigEndian.Uint64(k) }

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
