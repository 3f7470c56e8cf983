package eventlog

import (
	"context"
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
func (l *Bolt) Compact(ctx context.Context) error {
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
func (l *Bolt) ageCutoff() *int64 {
	if l.opts.MaxAge <= 0 {
		return nil
	}
	c := l.opts.Now().Add(-l.opts.MaxAge).UnixNano()
	return &c
}
