package fleet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
)

// ErrBadBatch: a message of the event stream whose events do not decode.
var ErrBadBatch = errors.New("fleet: a message of the event stream is not a valid batch of events")

// Bounds of one message of the event stream. A turn's events come in
// bursts; a message per event made the stream store, replicate, index and
// republish each one (most of a fleet's cost per event), so a message
// carries what the log holds past the last one, up to these. One event
// larger than maxBatchBytes goes alone.
const (
	maxBatchEvents = 1024
	maxBatchBytes  = 256 << 10
)

// batch is the events of one message: a lone event is its payload as is;
// more are framed, each as uvarint(seq) uvarint(len) payload, and the
// message says how many (eventsHeader). Either way seqHeader is the last
// event's seq, which is where the session stands once it is stored.
type batch struct {
	first, last uint64
	n           int
	lone        []byte // the only event's payload, until a second comes
	framed      []byte
}

// fits says whether an event of size bytes may join the batch.
func (b *batch) fits(size int) bool {
	return b.n == 0 || (b.n < maxBatchEvents && b.size()+size+2*binary.MaxVarintLen64 <= maxBatchBytes)
}

func (b *batch) size() int {
	if b.n == 1 {
		return len(b.lone)
	}
	return len(b.framed)
}

// add appends the event seq, whose logged bytes are payload (copied: a
// log's reader may reuse them).
func (b *batch) add(seq uint64, payload []byte) {
	switch b.n {
	case 0:
		b.first = seq
		b.lone = append(b.lone[:0], payload...)
	case 1:
		b.framed = appendFrame(b.framed[:0], b.last, b.lone)
		fallthrough
	default:
		b.framed = appendFrame(b.framed, seq, payload)
	}
	b.last = seq
	b.n++
}

func appendFrame(dst []byte, seq uint64, payload []byte) []byte {
	dst = binary.AppendUvarint(dst, seq)
	dst = binary.AppendUvarint(dst, uint64(len(payload)))
	return append(dst, payload...)
}

// msg is the batch as a message on subject, written by runner.
func (b *batch) msg(subject, runner string) *nats.Msg {
	m := &nats.Msg{Subject: subject, Header: nats.Header{}}
	m.Header.Set(seqHeader, strconv.FormatUint(b.last, 10))
	m.Header.Set(runnerHeader, runner)
	if b.n == 1 {
		m.Data = b.lone
	} else {
		m.Header.Set(eventsHeader, strconv.Itoa(b.n))
		m.Data = b.framed
	}
	return m
}

// msgID de-duplicates a retried publish of the same events.
func (b *batch) msgID(session string) string {
	if b.n == 1 {
		return session + ":" + strconv.FormatUint(b.last, 10)
	}
	return session + ":" + strconv.FormatUint(b.first, 10) + "-" + strconv.FormatUint(b.last, 10)
}

// loggedEvent is one event of a message: its seq and logged bytes.
type loggedEvent struct {
	seq     uint64
	payload []byte
}

// splitBatch reads the events of a message of the event stream, in seq
// order; the payloads share data. A message without seqHeader is no event
// (nil, nil).
func splitBatch(h nats.Header, data []byte) ([]loggedEvent, error) {
	last, err := seqOf(h)
	if err != nil {
		return nil, nil
	}
	count := h.Get(eventsHeader)
	if count == "" {
		return []loggedEvent{{seq: last, payload: data}}, nil
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 || n > maxBatchEvents {
		return nil, fmt.Errorf("%w: %s %q", ErrBadBatch, eventsHeader, count)
	}
	out := make([]loggedEvent, 0, n)
	for rest := data; len(rest) > 0; {
		seq, k := binary.Uvarint(rest)
		if k <= 0 {
			return nil, fmt.Errorf("%w: event %d's seq", ErrBadBatch, len(out)+1)
		}
		rest = rest[k:]
		size, k := binary.Uvarint(rest)
		if k <= 0 || size > uint64(len(rest)-k) {
			return nil, fmt.Errorf("%w: event %d's length", ErrBadBatch, len(out)+1)
		}
		rest = rest[k:]
		if len(out) == n || (len(out) > 0 && seq <= out[len(out)-1].seq) {
			return nil, fmt.Errorf("%w: more than %d events, or out of order", ErrBadBatch, n)
		}
		out = append(out, loggedEvent{seq: seq, payload: rest[:size:size]})
		rest = rest[size:]
	}
	if len(out) != n || out[n-1].seq != last {
		return nil, fmt.Errorf("%w: %d events ending at %d, where the headers say %d ending at %d",
			ErrBadBatch, len(out), lastSeq(out), n, last)
	}
	return out, nil
}

func lastSeq(events []loggedEvent) uint64 {
	if len(events) == 0 {
		return 0
	}
	return events[len(events)-1].seq
}
