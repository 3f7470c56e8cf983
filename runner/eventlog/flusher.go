package eventlog

import (
	"context"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Group commit
//
// Append only touches memory: under Log.mu it assigns the seq, appends
// the event to its session's tail (events assigned but not committed) and,
// when the first session becomes dirty, wakes the flusher. The flusher
// waits for the group-commit window to elapse since that first append
// (or less, when Sync, a waiting appender or a large pending volume asks
// for it), takes every dirty tail, and writes them all in one bbolt
// transaction (one fsync), while appends go on filling the tails. Only
// after the commit may it drop the committed prefix of each tail (it
// keeps some a little longer for readers, see keep), so an event is
// always readable, from memory or from disk. Under load the
// commits run back to back, each carrying what arrived during the last.
//
// Backpressure: every uncommitted event is charged its record size plus
// eventOverhead; Append waits (for a commit, ctx, or Close) while the
// charge would go over MaxPendingBytes.
//
// Durability tracking: each appended event takes a ticket (Log.appended);
// a commit takes every pending event, so when it succeeds every ticket
// issued before it was taken is durable (Log.durable). A failed commit
// leaves the events pending and is retried with backoff; Sync reports
// it.

// maxBackoff bounds the wait between retries of a failed commit.
const maxBackoff = time.Second

// run is the flusher goroutine.
func (l *Bolt) run() {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	// dropKept fires every keepFor while records are kept (see keep);
	// dropC is nil while none are.
	dropKept := time.NewTimer(time.Hour)
	dropKept.Stop()
	defer dropKept.Stop()
	var dropC <-chan time.Time
	var backoff time.Duration
	for {
		if dropC == nil && l.keeping() {
			dropKept.Reset(l.opts.keepFor)
			dropC = dropKept.C
		}
		urgent := false
		select {
		case <-l.wake:
		case <-l.urgent:
			urgent = true
		case <-dropC:
			dropC = nil
			l.mu.Lock()
			l.dropOldKept()
			l.mu.Unlock()
			continue
		case <-l.stop:
			l.finalErr = l.flush()
			return
		}
		if d := l.window(); d > 0 && !urgent {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-l.urgent:
				timer.Stop()
			case <-l.stop:
				timer.Stop()
				l.finalErr = l.flush()
				return
			}
		}
		err := l.flush()
		if err == nil {
			backoff = 0
			continue
		}
		backoff = min(max(2*backoff, l.opts.FlushInterval, time.Millisecond), maxBackoff)
		l.log.Error("eventlog commit failed, retrying", "err", err, "retry_in", backoff)
		timer.Reset(backoff)
		select {
		case <-timer.C:
		case <-l.stop:
			timer.Stop()
			l.finalErr = l.flush()
			return
		}
		signal(l.wake)
	}
}

// window returns how long the flusher should still wait for more appends
// to join the next commit.
func (l *Bolt) window() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.dirty) == 0 || l.opts.FlushInterval <= 0 {
		return 0
	}
	return time.Until(l.pendingSince.Add(l.opts.FlushInterval))
}

// batchItem is what a commit takes of one session: its tail, and its
// gaps and metadata when they changed.
type batchItem struct {
	s      *sessionState
	evs    []record
	last   uint64 // the session's last seq when taken (past evs after a Skip)
	first  uint64 // the session's First when taken: older events are not written, and deleted from disk
	charge int64

	gaps    []gap // nil unless they changed
	gapsVer uint64
	meta    []byte
	metaVer uint64 // 0 unless the metadata changed
}

// flush commits every pending event in one transaction.
func (l *Bolt) flush() error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()

	l.mu.Lock()
	if len(l.dirty) == 0 {
		l.mu.Unlock()
		return nil
	}
	items := make([]batchItem, 0, len(l.dirty))
	for _, s := range l.dirty {
		s.dirty = false
		it := batchItem{s: s, evs: s.tail[s.kept:len(s.tail):len(s.tail)], last: s.last, first: s.first, charge: s.tailBytes}
		if s.gapsVer != s.committedGapsVer {
			it.gaps, it.gapsVer = s.gaps, s.gapsVer
		}
		if s.metaVer != s.committedMetaVer {
			it.meta, it.metaVer = s.meta, s.metaVer
		}
		items = append(items, it)
	}
	clear(l.dirty)
	l.dirty = l.dirty[:0]
	feed, feedFirst := slices.Clone(l.feedPending), l.feedFirst
	l.feedTaken = len(feed)
	ticket := l.appended
	select {
	case <-l.urgent: // served by this commit
	default:
	}
	l.mu.Unlock()

	began := time.Now()
	newFirst, err := l.commit(items, feed, feedFirst)
	if hook := l.opts.OnCommit; hook != nil {
		n := 0
		for _, it := range items {
			n += len(it.evs)
		}
		hook(time.Since(began), n, err)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	defer func() {
		close(l.flushed)
		l.flushed = make(chan struct{})
	}()
	if err != nil {
		for _, it := range items {
			if !it.s.dirty {
				it.s.dirty = true
				l.dirty = append(l.dirty, it.s)
			}
		}
		l.feedTaken = 0
		l.pendingSince = time.Now()
		l.failures++
		l.failTicket = ticket
		l.failErr = err
		return err
	}
	var charge int64
	for _, it := range items {
		s := it.s
		l.keep(s, it.evs)
		s.tailBytes -= it.charge
		charge += it.charge
		s.committed = max(s.committed, it.last)
		s.diskFirst = max(s.diskFirst, it.first)
		if it.gaps != nil {
			s.committedGapsVer = it.gapsVer
		}
		if it.metaVer != 0 {
			s.committedMetaVer = it.metaVer
			if s.metaVer == it.metaVer {
				s.meta = nil // on disk now: Meta reads it there
			}
		}
	}
	l.pendingBytes -= charge
	l.durable = ticket
	if len(feed) > 0 {
		l.feedPending = slices.Delete(l.feedPending, 0, len(feed))
		l.feedCommitted = feed[len(feed)-1].last()
		l.feedFirst = newFirst
	}
	l.feedTaken = 0
	return nil
}

// commit writes the items and the feed's runs in one transaction, and
// returns the feed's first position after its retention.
func (l *Bolt) commit(items []batchItem, feed []feedRun, feedFirst uint64) (uint64, error) {
	if hook := l.opts.commitHook; hook != nil {
		if err := hook(); err != nil {
			return feedFirst, fmt.Errorf("eventlog: commit: %w", err)
		}
	}
	err := l.db.Update(func(tx *bolt.Tx) error {
		if len(feed) > 0 {
			var err error
			if feedFirst, err = l.putFeed(tx, feed, feedFirst); err != nil {
				return err
			}
		}
		root := tx.Bucket(bucketSessions)
		for _, it := range items {
			sb, err := sessionBucket(root, it.s.name)
			if err != nil {
				return err
			}
			evb := sb.Bucket(bucketEvents)
			evb.FillPercent = 1 // keys only grow: pack the pages
			if it.s.diskFirst < it.first {
				if err := dropBefore(evb, min(it.first, it.s.committed+1)); err != nil {
					return err
				}
			}
			if err := putEvents(evb, it.evs, it.first); err != nil {
				return err
			}
			if it.last > it.s.committed {
				if err := evb.SetSequence(it.last); err != nil {
					return err
				}
			}
			if it.gaps != nil {
				if err := sb.Put(keyGaps, encodeGaps(it.gaps)); err != nil {
					return err
				}
			}
			if it.metaVer != 0 {
				if err := sb.Put(keyMeta, it.meta); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return feedFirst, boltErr("eventlog: commit", err)
}

// Keeping committed events
//
// A commit does not drop what it wrote from memory at once: a front end's
// writer that follows the session a commit or two behind its pump would
// read it back from the file, which costs more than the commit saved. The
// committed records stay at the head of the tail (sessionState.kept) until
// a reader has taken them from there (sessionState.readTo), and at most
// keepSessionBytes of them per session and Options.MaxPendingBytes in all
// (as much as may wait for the disk); every
// keepFor the flusher drops those it already kept the time before, so a
// record stays at most twice that long and a session that goes quiet
// holds none for long. A kept record is found in memory like a pending
// one, and on disk once dropped.
const (
	keepFor          = 50 * time.Millisecond
	keepSessionBytes = 16 << 20
)

// keep notes that the records evs of s, which followed its kept ones, are
// committed, and drops the kept records a reader has taken or that go
// over the bounds. Under mu and writeMu.
func (l *Bolt) keep(s *sessionState, evs []record) {
	if len(evs) == 0 {
		return
	}
	if !s.keeper {
		l.keepers = append(l.keepers, s)
		s.keeper, s.keepMark = true, 0
	}
	s.kept += len(evs)
	for _, r := range evs {
		s.keptBytes += int64(len(r))
		l.keptBytes += int64(len(r))
	}
	drop, size := 0, int64(0)
	for drop < s.kept {
		r := s.tail[drop]
		if r.seq() > s.readTo && s.keptBytes-size <= keepSessionBytes && l.keptBytes-size <= l.opts.MaxPendingBytes {
			break
		}
		drop++
		size += int64(len(r))
	}
	l.dropKept(s, drop, size)
}

// dropKept drops the first n kept records of s, size bytes.
func (l *Bolt) dropKept(s *sessionState, n int, size int64) {
	if n == 0 {
		return
	}
	rest := s.tail[n:]
	switch {
	case len(rest) == 0:
		s.tail = nil
	case n >= len(rest):
		// Most of the array is dropped: copy the rest so the dropped
		// records can be freed; readers may still hold the old array,
		// which is never written again.
		s.tail = append([]record(nil), rest...)
	default:
		// Keep the array: appends write past its end, where no reader
		// looks, and the dropped prefix goes with the next copy (here,
		// or when an append outgrows the array). Copying the rest at
		// every commit cost a copy of a long tail per commit while a
		// reader lagged behind.
		s.tail = rest
	}
	s.kept -= n
	s.keptBytes -= size
	l.keptBytes -= size
}

// dropAllKept drops every kept record (see keep). Under mu.
func (l *Bolt) dropAllKept() {
	for _, s := range l.keepers {
		l.dropKept(s, s.kept, s.keptBytes)
		s.keeper = false
	}
	clear(l.keepers)
	l.keepers = l.keepers[:0]
}

// dropOldKept drops the records kept since before the last call, and
// notes what is kept now for the next. Under mu.
func (l *Bolt) dropOldKept() {
	keepers := l.keepers[:0]
	for _, s := range l.keepers {
		drop, size := 0, int64(0)
		for drop < s.kept && s.tail[drop].seq() <= s.keepMark {
			size += int64(len(s.tail[drop]))
			drop++
		}
		l.dropKept(s, drop, size)
		if s.kept > 0 {
			s.keepMark = s.tail[s.kept-1].seq()
			keepers = append(keepers, s)
		} else {
			s.keeper = false
		}
	}
	clear(l.keepers[len(keepers):])
	l.keepers = keepers
}

// keeping reports whether records are kept.
func (l *Bolt) keeping() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keepers) > 0
}

// Sync waits until every event appended before the call is committed to
// disk. It returns the commit's error if the commit carrying them failed
// (they stay pending and are retried), ctx's error if ctx is done first,
// and ErrClosed after Close.
func (l *Bolt) Sync(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return fmt.Errorf("eventlog: sync: %w", ErrClosed)
	}
	target := l.appended
	failures := l.failures
	for l.durable < target {
		if l.failures != failures && l.failTicket >= target {
			err := l.failErr
			l.mu.Unlock()
			return fmt.Errorf("eventlog: sync: %w", err)
		}
		flushed := l.flushed
		signal(l.urgent)
		l.mu.Unlock()
		select {
		case <-flushed:
		case <-l.done:
			l.mu.Lock()
			ok := l.durable >= target
			l.mu.Unlock()
			if ok {
				return nil
			}
			return fmt.Errorf("eventlog: sync: %w", ErrClosed)
		case <-ctx.Done():
			return fmt.Errorf("eventlog: sync: %w", ctx.Err())
		}
		l.mu.Lock()
	}
	l.mu.Unlock()
	return nil
}
