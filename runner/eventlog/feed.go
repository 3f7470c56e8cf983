package eventlog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"

	bolt "go.etcd.io/bbolt"
)

// The feed
//
// Every event the log holds has, besides its session's seq, a place in
// the log's feed: positions from 1, one per event, in the order events
// were appended across sessions. The feed is the log's own numbering, not
// a second copy: what a commit writes for it is one small record per
// append (a feed run: the first position, the session, its first seq and
// how many), in the feed bucket, keyed by the run's first position. A
// reader of the feed finds the runs after its position and reads their
// events from their sessions. Retention keeps the newest
// Options.MaxFeedEvents positions; an event its session's retention
// dropped (or a deleted session's) is passed over.

// bucketFeed holds the feed runs; its sequence is the last position
// committed.
var bucketFeed = []byte("feed")

// DefaultMaxFeedEvents is the feed's retention by count.
const DefaultMaxFeedEvents = 200_000

// FeedEntry is one event of the feed: its position, its session, and the
// event itself (with its seq in its session).
type FeedEntry struct {
	Pos     uint64
	Session string
	Event
}

// feedRun is the positions pos..pos+n-1, given to the seqs seq..seq+n-1
// of session name.
type feedRun struct {
	pos, seq, n uint64
	name        string
}

func (r feedRun) last() uint64 { return r.pos + r.n - 1 }

func (r feedRun) key() []byte { return seqKey(r.pos) }

func (r feedRun) value() []byte {
	v := make([]byte, 16, 16+len(r.name))
	binary.BigEndian.PutUint64(v, r.seq)
	binary.BigEndian.PutUint64(v[8:], r.n)
	return append(v, r.name...)
}

func decodeFeedRun(k, v []byte) (feedRun, error) {
	if len(k) != 8 || len(v) < 17 {
		return feedRun{}, fmt.Errorf("%w: a feed run of %d+%d bytes", ErrCorrupt, len(k), len(v))
	}
	r := feedRun{pos: binary.BigEndian.Uint64(k), seq: binary.BigEndian.Uint64(v), n: binary.BigEndian.Uint64(v[8:16]), name: string(v[16:])}
	if r.n == 0 || r.pos == 0 || r.seq == 0 {
		return feedRun{}, fmt.Errorf("%w: a feed run at %d holds nothing", ErrCorrupt, r.pos)
	}
	return r, nil
}

// notePositions gives the n events just appended to s, from seq, their
// positions: the run of the previous append grows when it is the same
// session's, next in both numberings. Under mu.
func (l *Bolt) notePositions(s *sessionState, seq, n uint64) uint64 {
	pos := l.feedLast + 1
	l.feedLast += n
	if k := len(l.feedPending); k > l.feedTaken { // a run a commit took stays as it was taken
		if r := &l.feedPending[k-1]; r.name == s.name && r.last()+1 == pos && r.seq+r.n == seq {
			r.n += n
			return pos
		}
	}
	l.feedPending = append(l.feedPending, feedRun{pos: pos, seq: seq, n: n, name: s.name})
	return pos
}

// loadFeed reads the feed's bounds.
func loadFeed(tx *bolt.Tx) (first, last uint64, err error) {
	b, err := tx.CreateBucketIfNotExists(bucketFeed)
	if err != nil {
		return 0, 0, err
	}
	last = b.Sequence()
	k, v := b.Cursor().First()
	if k == nil {
		return last + 1, last, nil
	}
	r, err := decodeFeedRun(k, v)
	if err != nil {
		return 0, 0, err
	}
	return r.pos, last, nil
}

// putFeed writes the runs a commit takes, and drops the oldest past the
// feed's retention; it returns the feed's new first position.
func (l *Bolt) putFeed(tx *bolt.Tx, runs []feedRun, first uint64) (uint64, error) {
	b := tx.Bucket(bucketFeed)
	b.FillPercent = 1 // keys only grow
	for _, r := range runs {
		if err := b.Put(r.key(), r.value()); err != nil {
			return first, err
		}
	}
	last := runs[len(runs)-1].last()
	if err := b.SetSequence(last); err != nil {
		return first, err
	}
	limit := l.opts.MaxFeedEvents
	if limit <= 0 || last-first+1 <= uint64(limit) {
		return first, nil
	}
	keepFrom := last - uint64(limit) + 1
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.First() {
		r, err := decodeFeedRun(k, v)
		if err != nil {
			return first, err
		}
		if r.pos >= keepFrom {
			return r.pos, nil
		}
		if err := c.Delete(); err != nil {
			return first, err
		}
		if r.last() >= keepFrom { // the run straddles the limit: keep its tail
			skip := keepFrom - r.pos
			tail := feedRun{pos: keepFrom, seq: r.seq + skip, n: r.n - skip, name: r.name}
			if err := b.Put(tail.key(), tail.value()); err != nil {
				return first, err
			}
			return keepFrom, nil
		}
	}
	return last + 1, nil
}

// FeedFirst is the oldest position the feed retains (FeedLast+1 when it
// holds none); FeedLast the newest position given, committed or not (0
// when none was).
func (l *Bolt) FeedFirst() (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, fmt.Errorf("eventlog: feed: %w", ErrClosed)
	}
	return l.feedFirst, nil
}

func (l *Bolt) FeedLast() (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, fmt.Errorf("eventlog: feed: %w", ErrClosed)
	}
	return l.feedLast, nil
}

// Feed yields the feed's events after position after, in order, up to
// the last position given when Feed was called. An event whose session
// no longer holds it is passed over. Errors are yielded once, after which
// the iteration stops: ErrAhead when after is past the feed's end,
// ErrTruncated when the feed's retention dropped positions after
// `after`, ctx's error, ErrClosed. Payloads are shared, as Read's.
func (l *Bolt) Feed(ctx context.Context, after uint64) iter.Seq2[FeedEntry, error] {
	l.mu.Lock()
	first, end, closed := l.feedFirst, l.feedLast, l.closed
	l.mu.Unlock()
	return func(yield func(FeedEntry, error) bool) {
		switch {
		case closed:
			yield(FeedEntry{}, fmt.Errorf("eventlog: feed: %w", ErrClosed))
			return
		case after > end:
			yield(FeedEntry{}, fmt.Errorf("%w: the feed is at %d, the reader at %d", ErrAhead, end, after))
			return
		case after+1 < first:
			yield(FeedEntry{}, fmt.Errorf("%w: feed: reader is at %d but the oldest retained position is %d", ErrTruncated, after, first))
			return
		}
		var buf []Event
		for after < end {
			runs, err := l.feedRuns(after, end)
			if err != nil {
				yield(FeedEntry{}, err)
				return
			}
			if len(runs) == 0 {
				return
			}
			for _, r := range runs {
				if err := ctx.Err(); err != nil {
					yield(FeedEntry{}, fmt.Errorf("eventlog: feed: %w", err))
					return
				}
				var ok bool
				if buf, ok = l.yieldRun(r, after, end, buf, yield); !ok {
					return
				}
				after = r.last()
			}
		}
	}
}

// feedChunk bounds the runs one read of the feed takes.
const feedChunk = 256

// feedRuns returns the runs that hold positions after `after`, up to
// end: the committed ones from the file, then those in memory.
func (l *Bolt) feedRuns(after, end uint64) ([]feedRun, error) {
	l.mu.Lock()
	committed := l.feedCommitted
	var pending []feedRun
	if after >= committed {
		for _, r := range l.feedPending {
			if r.last() > after && r.pos <= end {
				pending = append(pending, r)
			}
		}
	}
	l.mu.Unlock()
	if after >= committed {
		return pending, nil
	}
	var runs []feedRun
	err := l.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketFeed)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		k, v := c.Seek(seqKey(after + 1))
		if k == nil || binary.BigEndian.Uint64(k) > after+1 {
			if pk, pv := c.Prev(); pk != nil {
				k, v = pk, pv // the run that may hold after+1
			} else {
				k, v = c.First()
			}
		}
		for ; k != nil && len(runs) < feedChunk; k, v = c.Next() {
			r, err := decodeFeedRun(k, v)
			if err != nil {
				return err
			}
			if r.pos > end {
				break
			}
			if r.last() > after {
				runs = append(runs, r)
			}
		}
		return nil
	})
	return runs, boltErr("eventlog: feed", err)
}

// yieldRun yields the events of run r after position after (and up to
// end), reading them from their session; it reports whether to go on.
func (l *Bolt) yieldRun(r feedRun, after, end uint64, buf []Event, yield func(FeedEntry, error) bool) ([]Event, bool) {
	from := r.seq + max(after+1, r.pos) - r.pos
	to := r.seq + min(r.last(), end) - r.pos
	s, err := l.lookup(r.name)
	if err != nil || s == nil {
		return buf, true // deleted: its positions are passed over
	}
	l.mu.Lock()
	gaps, first := s.gaps, s.first
	l.mu.Unlock()
	from = max(from, first)
	for next := skipGaps(gaps, from); next <= to; {
		var err error
		buf, err = l.readChunk(s, next, to, gaps, buf[:0])
		if errors.Is(err, ErrTruncated) || errors.Is(err, ErrUnknownSession) {
			return buf, true // retention or a delete took them meanwhile
		}
		if err != nil {
			return buf, yield(FeedEntry{}, err)
		}
		for _, ev := range buf {
			if !yield(FeedEntry{Pos: r.pos + ev.Seq - r.seq, Session: r.name, Event: ev}, nil) {
				return buf, false
			}
		}
		next = skipGaps(gaps, buf[len(buf)-1].Seq+1)
	}
	return buf, true
}
