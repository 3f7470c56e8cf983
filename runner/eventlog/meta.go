package eventlog

import (
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// SetMeta stores small per-session metadata (the runner keeps there what
// it needs to resume the session after a restart), replacing the previous
// one, and creates the session if needed. It is on disk when SetMeta
// returns.
func (l *Bolt) SetMeta(session string, meta []byte) error {
	if err := checkName(session); err != nil {
		return err
	}
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.isClosed() {
		return fmt.Errorf("eventlog: set meta of %q: %w", session, ErrClosed)
	}
	err := l.db.Update(func(tx *bolt.Tx) error {
		sb, err := sessionBucket(tx.Bucket(bucketSessions), session)
		if err != nil {
			return err
		}
		return sb.Put(keyMeta, slices.Clone(meta))
	})
	if err != nil {
		return boltErr(fmt.Sprintf("eventlog: set meta of %q", session), err)
	}
	l.mu.Lock()
	s := l.sessions[session]
	if s == nil {
		s = &sessionState{name: session, first: 1, diskFirst: 1}
		l.sessions[session] = s
	}
	// Supersedes metadata still waiting for a group commit (none can be
	// in flight: this holds writeMu).
	s.meta = nil
	s.metaVer++
	s.committedMetaVer = s.metaVer
	l.mu.Unlock()
	return nil
}

// SetMetaAsync is SetMeta without a commit of its own: it returns at
// once, Meta sees the new metadata at once, and it goes to disk with the
// next group commit (within FlushInterval, or on Sync or Close), in the
// same transaction as the events appended before that commit and never
// after an event appended after the call. So a session whose events
// reached the disk has its metadata there too; after a crash before that
// commit, the log has neither (Meta reports ErrUnknownSession if the
// session was new).
func (l *Bolt) SetMetaAsync(session string, meta []byte) error {
	if err := checkName(session); err != nil {
		return err
	}
	meta = slices.Clone(meta)
	if meta == nil {
		meta = []byte{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("eventlog: set meta of %q: %w", session, ErrClosed)
	}
	s := l.sessions[session]
	if s == nil {
		s = &sessionState{name: session, first: 1, diskFirst: 1}
		l.sessions[session] = s
	}
	s.meta = meta
	s.metaVer++
	l.pend(s, 1, int64(len(meta))+eventOverhead)
	return nil
}

// Meta returns the metadata of session: nil if none was set,
// ErrUnknownSession if the session does not exist.
func (l *Bolt) Meta(session string) ([]byte, error) {
	s, err := l.lookup(session)
	if err != nil {
		return nil, fmt.Errorf("eventlog: meta of %q: %w", session, err)
	}
	if s == nil {
		return nil, fmt.Errorf("eventlog: meta of %q: %w", session, ErrUnknownSession)
	}
	l.mu.Lock()
	pending := s.meta
	l.mu.Unlock()
	if pending != nil {
		return clone(pending), nil
	}
	var meta []byte
	err = l.db.View(func(tx *bolt.Tx) error {
		if sb := tx.Bucket(bucketSessions).Bucket([]byte(session)); sb != nil {
			meta = clone(sb.Get(keyMeta))
		}
		return nil
	})
	if err != nil {
		return nil, boltErr(fmt.Sprintf("eventlog: meta of %q", session), err)
	}
	return meta, nil
}

// Delete removes session: its events, including those not yet committed,
// and its metadata. Readers of the session fail with ErrUnknownSession. A
// later Append to the same name starts a new session at seq 1.
func (l *Bolt) Delete(session string) error {
	if err := checkName(session); err != nil {
		return err
	}
	l.writeMu.Lock() // no commit in flight: the session's tail is kept or pending
	defer l.writeMu.Unlock()
	l.structMu.Lock() // no reader between its checks and its transaction
	defer l.structMu.Unlock()

	s, err := l.lookup(session)
	if err != nil {
		return fmt.Errorf("eventlog: delete %q: %w", session, err)
	}
	if s == nil {
		return fmt.Errorf("eventlog: delete %q: %w", session, ErrUnknownSession)
	}
	err = l.db.Update(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketSessions).DeleteBucket([]byte(session))
		if err == berrors.ErrBucketNotFound {
			return nil // never committed
		}
		return err
	})
	if err != nil {
		return boltErr(fmt.Sprintf("eventlog: delete %q", session), err)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.sessions, session)
	if s.dirty {
		l.dirty = slices.DeleteFunc(l.dirty, func(d *sessionState) bool { return d == s })
		s.dirty = false
	}
	l.pendingBytes -= s.tailBytes
	l.dropKept(s, s.kept, s.keptBytes)
	if len(l.dirty) == 0 {
		l.durable = l.appended // nothing pending, nothing in flight
	}
	close(l.flushed) // appenders waiting for room: there may be some now
	l.flushed = make(chan struct{})
	return nil
}

func (l *Bolt) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}
