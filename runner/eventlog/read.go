package eventlog

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Read works in chunks: each chunk is served either from the session's
// tail (under Log.mu: events not yet committed, and committed ones kept a
// little, see keep) or from one short bbolt read transaction, copied out,
// and only then yielded, so that a slow consumer never holds a lock or a
// transaction, and a long replay never holds the whole log in memory. An
// event leaves the tail only after its commit, so every event up to the
// snapshot is found in one place or the other.
const (
	chunkEvents = 1024
	chunkBytes  = 1 << 20
)

// Read returns every event of session with Seq > after, in order, up to
// the last one appended when Read was called, committed or not: no gaps,
// no duplicates. Each iteration of the result reads again from after.
//
// Errors are yielded once, after which the iteration stops:
// ErrTruncated when events after `after` were dropped by retention
// (before or during the iteration: a slow reader can fall behind),
// ErrAhead when after is past the session's last event, ErrUnknownSession
// when the session is deleted meanwhile, ctx's error, ErrClosed. An
// unknown session read from 0 yields nothing.
//
// Payloads are shared, for readers that decode or pass them on: those of
// events not yet committed are the log's own memory, those read from disk
// share one copy per stored run. They stay valid as long as they are
// referenced, and must not be modified.
func (l *Bolt) Read(ctx context.Context, session string, after uint64) iter.Seq2[Event, error] {
	s, err := l.lookup(session)
	var end, first uint64 = 0, 1
	var gaps []gap
	if s != nil {
		l.mu.Lock()
		end, first, gaps = s.last, s.first, s.gaps
		l.mu.Unlock()
	}
	return func(yield func(Event, error) bool) {
		switch {
		case err != nil:
			yield(Event{}, fmt.Errorf("eventlog: read %q: %w", session, err))
			return
		case after > end:
			yield(Event{}, fmt.Errorf("%w: session %q: reader is at %d, last event is %d", ErrAhead, session, after, end))
			return
		case after+1 < first:
			yield(Event{}, truncated(session, after, first))
			return
		}
		buf := make([]Event, 0, min(end-after, chunkEvents))
		for next := skipGaps(gaps, after+1); next <= end; {
			if err := ctx.Err(); err != nil {
				yield(Event{}, fmt.Errorf("eventlog: read %q: %w", session, err))
				return
			}
			var err error
			if buf, err = l.readChunk(s, next, end, gaps, buf[:0]); err != nil {
				yield(Event{}, err)
				return
			}
			for _, ev := range buf {
				if !yield(ev, nil) {
					return
				}
			}
			next = skipGaps(gaps, buf[len(buf)-1].Seq+1)
		}
	}
}

// ownTogether copies the payloads of events read from one stored value
// into one allocation, each capped at its own length: readers pass them
// on together, and one allocation per value instead of one per event
// keeps a replay from disk cheap.
func ownTogether(evs []Event) {
	n := 0
	for _, ev := range evs {
		n += len(ev.Payload)
	}
	if n == 0 {
		for i := range evs {
			evs[i].Payload = nil
		}
		return
	}
	mem := make([]byte, 0, n)
	for i, ev := range evs {
		if len(ev.Payload) == 0 {
			evs[i].Payload = nil
			continue
		}
		start := len(mem)
		mem = append(mem, ev.Payload...)
		evs[i].Payload = mem[start:len(mem):len(mem)]
	}
}

// readChunk appends to buf the events of s from seq from on (which is in
// no gap), at most up to end, and at least one; it passes over gaps.
// Uncommitted payloads are not copied.
func (l *Bolt) readChunk(s *sessionState, from, end uint64, gaps []gap, buf []Event) ([]Event, error) {
	l.structMu.RLock()
	defer l.structMu.RUnlock()

	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return buf, fmt.Errorf("eventlog: read %q: %w", s.name, ErrClosed)
	case l.sessions[s.name] != s:
		l.mu.Unlock()
		return buf, fmt.Errorf("eventlog: read %q: %w (deleted while reading)", s.name, ErrUnknownSession)
	case from < s.first:
		first := s.first
		l.mu.Unlock()
		return buf, truncated(s.name, from-1, first)
	}
	if len(s.tail) > 0 && from >= s.tail[0].seq() {
		// In seq order, consecutive but for gaps: search, then cut at end.
		tail := s.tail
		i, _ := slices.BinarySearchFunc(tail, from, func(r record, seq uint64) int { return cmp.Compare(r.seq(), seq) })
		j, _ := slices.BinarySearchFunc(tail, end+1, func(r record, seq uint64) int { return cmp.Compare(r.seq(), seq) })
		recs := tail[i:min(j, i+chunkEvents)]
		if len(recs) > 0 {
			s.readTo = max(s.readTo, recs[len(recs)-1].seq())
		}
		l.mu.Unlock()
		for _, r := range recs {
			buf = append(buf, r.sharedEvent())
		}
		if len(buf) == 0 {
			return buf, fmt.Errorf("%w: session %q: event %d is missing", ErrCorrupt, s.name, from)
		}
		return buf, nil
	}
	l.mu.Unlock()

	// Committed: on disk, unless retention dropped it since.
	err := l.db.View(func(tx *bolt.Tx) error {
		evb := eventsBucket(tx.Bucket(bucketSessions), s.name)
		if evb == nil {
			return nil
		}
		c := evb.Cursor()
		want, size, full := from, 0, false
		for k, v := c.Seek(seqKey(from)); k != nil && !full; k, v = c.Next() {
			start := len(buf)
			run, err := runValue(evb, k, v)
			if err != nil {
				return err
			}
			err = eachStored(k, run, func(seq uint64, t int64, payload []byte) bool {
				if seq < want {
					return true // the value holding from starts before it
				}
				if seq > end || len(buf) == chunkEvents || size >= chunkBytes ||
					seq != want && !inGap(gaps, want, seq-1) {
					full = true
					return false
				}
				buf = append(buf, Event{Seq: seq, Time: time.Unix(0, t), Payload: payload})
				size += 8 + len(payload)
				want = seq + 1
				return true
			})
			// The payloads alias the file: copy them before the
			// transaction ends.
			ownTogether(buf[start:])
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return buf, boltErr(fmt.Sprintf("eventlog: read %q", s.name), err)
	}
	if len(buf) > 0 {
		return buf, nil
	}
	l.mu.Lock()
	first := s.first
	l.mu.Unlock()
	if from < first {
		return buf, truncated(s.name, from-1, first)
	}
	return buf, fmt.Errorf("%w: session %q: committed event %d is missing", ErrCorrupt, s.name, from)
}
