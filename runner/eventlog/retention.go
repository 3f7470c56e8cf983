package eventlog

import (
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Retention drops the oldest events of a session; it never renumbers the
// others nor lowers the next seq. By count it is applied continuously:
// Append advances First as soon as a session holds more than
// MaxEventsPerSession events, and the flusher deletes the dropped ones in
// its next transaction. By age it is applied by Compact and on Open.

// Compact drops the events older than Options.MaxAge (nothing when
// MaxAge is 0). Sessions themselves, their metadata and their next seq
// are kept even when all their events go. If ctx is done midway, what
// was dropped so far is committed and ctx's error returned.
func (l *Log) Compact(ctx context.Context) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return fmt.Errorf("eventlog: compact: %w", ErrClosed)
	}
	list := make([]*sessionState, 0, len(l.sessions))
	for _, s := range l.sessions {
		list = append(list, s)
	}
	l.mu.Unlock()
	cutoff := l.ageCutoff()
	if cutoff == nil {
		return nil
	}

	type cutAt struct {
		s   *sessionState
		cut uint64
	}
	var cuts []cutAt
	var ctxErr error
	err := l.db.Update(func(tx *bolt.Tx) error {
		cuts = cuts[:0]
		root := tx.Bucket(bucketSessions)
		for _, s := range list {
			if ctxErr = ctx.Err(); ctxErr != nil {
				break
			}
			evb := eventsBucket(root, s.name)
			if evb == nil {
				continue
			}
			cut, err := expire(evb, s.diskFirst, *cutoff)
			if err != nil {
				return err
			}
			if cut > s.diskFirst {
				cuts = append(cuts, cutAt{s, cut})
			}
		}
		// Publish the new First before the events disappear, so that a
		// reader that finds them gone knows they were dropped.
		l.mu.Lock()
		for _, c := range cuts {
			c.s.first = max(c.s.first, c.cut)
		}
		l.mu.Unlock()
		return nil
	})
	if err != nil {
		return boltErr("eventlog: compact", err)
	}
	var dropped uint64
	for _, c := range cuts {
		dropped += c.cut - c.s.diskFirst
		c.s.diskFirst = c.cut
	}
	l.log.Debug("eventlog compacted", "sessions", len(cuts), "dropped", dropped)
	if ctxErr != nil {
		return fmt.Errorf("eventlog: compact: %w", ctxErr)
	}
	return nil
}

// ageCutoff returns the Unix-ns time before which events expire, nil
// when retention by age is off.
func (l *Log) ageCutoff() *int64 {
	if l.opts.MaxAge <= 0 {
		return nil
	}
	c := l.opts.Now().Add(-l.opts.MaxAge).UnixNano()
	return &c
}

// expire deletes the events of evb, from seq from on, whose time is
// before cutoff, stopping at the first that is not, and returns the seq
// after the last deleted one (from when none was). Times never go back
// within a session, so the expired events are a prefix.
func expire(evb *bolt.Bucket, from uint64, cutoff int64) (uint64, error) {
	cut := from
	c := evb.Cursor()
	for k, v := c.Seek(seqKey(from)); k != nil; k, v = c.Next() {
		if len(v) < 8 || int64(binary.BigEndian.Uint64(v)) >= cutoff {
			break
		}
		cut = seqOf(k) + 1
	}
	return cut, dropBefore(evb, from, cut)
}

// dropBefore deletes the events with seqs in [from, to). It visits the
// events there, not every seq, so a gap costs nothing.
func dropBefore(evb *bolt.Bucket, from, to uint64) error {
	c := evb.Cursor()
	for k, _ := c.Seek(seqKey(from)); k != nil && seqOf(k) < to; k, _ = c.Seek(seqKey(from)) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
