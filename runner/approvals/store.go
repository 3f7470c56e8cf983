// Package approvals owns the runner's durable approvals: every pending
// decision about a tool use, from any session and any agent, kept on disk
// so that it can be listed, answered from anywhere, and outlive both the
// client's connection and the runner's restart.
//
// The first resolution of an approval wins; a later one is refused with
// the first (agent.AlreadyResolvedError), so two phones answering at once
// agree on one outcome. An approval with an expiry resolves itself with
// its default decision (deny unless it says otherwise) when Expire runs
// past it; one whose session ends is resolved by ResolveSession. Nothing
// waits forever.
//
// Storage is a bbolt file of its own: one bucket, one JSON record per
// approval, keyed by session and approval id. The clock is injectable.
package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/eventlog/boltfile"
)

const bucketName = "approvals"

// ErrExists: an approval with that session and id was added already.
var ErrExists = errors.New("approvals: already recorded")

// ErrDamaged matches the *DamagedError of Open.
var ErrDamaged = boltfile.ErrDamaged

// DamagedError is the error of Open for a file it cannot use: which file,
// what is wrong and, once the caller sets Remedy, what to do.
type DamagedError = boltfile.DamagedError

// Record is an approval and, once decided, its resolution.
type Record struct {
	Approval   agent.Approval    `json:"approval"`
	Resolution *agent.Resolution `json:"resolution,omitempty"`
}

// Pending reports whether the approval still waits for a decision.
func (r Record) Pending() bool { return r.Resolution == nil }

// Store is the durable set of approvals. Its methods are safe for
// concurrent use.
type Store struct {
	db  *bolt.DB
	now func() time.Time

	mu      sync.Mutex
	waiters map[string][]chan agent.Resolution
}

// lockTimeout is how long Open waits for a file another store holds.
const lockTimeout = 2 * time.Second

// Open opens (or creates) the store at path. now is the clock for
// resolutions and expiry; nil means time.Now. A file that is not an
// approvals store, or is damaged, fails with a *DamagedError (matching
// ErrDamaged) naming it and what is wrong; Salvage saves what can be read
// of it.
func Open(path string, now func() time.Time) (*Store, error) {
	db, err := openBolt(path)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(bucketName))
		if errors.Is(err, berrors.ErrIncompatibleValue) {
			return &DamagedError{Path: path, Reason: "it is a bbolt file but not an approvals store (its approvals key is not a bucket)"}
		}
		if err != nil {
			return err
		}
		return checkRecords(path, b)
	})
	if err != nil {
		_ = db.Close()
		var de *DamagedError
		if errors.As(err, &de) {
			return nil, de
		}
		return nil, fmt.Errorf("approvals: open %s: %w", path, err)
	}
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, now: now, waiters: map[string][]chan agent.Resolution{}}, nil
}

// checkRecords checks that every record decodes: the runner lists them
// all as it starts, and a record overwritten with garbage would stop it
// with no word of what to do.
func checkRecords(path string, b *bolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		var r Record
		if err := json.Unmarshal(v, &r); err != nil {
			session, id, _ := strings.Cut(string(k), "\x00")
			return &DamagedError{Path: path, Reason: fmt.Sprintf("the record of approval %q of session %q does not decode (%v)", id, session, err)}
		}
		return nil
	})
}

// openBolt opens the file with bbolt, checked first under bbolt's lock
// (bbolt trusts the file it maps). Should a damage the check does not know
// make bbolt panic on this goroutine, that is a *DamagedError too, and
// what bbolt had opened stays so until the process, which cannot go on,
// exits.
func openBolt(path string) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedError{Path: path, Reason: fmt.Sprintf("bbolt cannot read it (%v)", r)}
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, OpenFile: boltfile.OpenChecked(lockTimeout, nil)})
	var de *DamagedError
	switch {
	case errors.As(err, &de):
		return nil, de // it names the file
	case err != nil:
		return nil, fmt.Errorf("approvals: open %s: %w", path, err)
	}
	return db, nil
}

// Close closes the file. Waiters still waiting get ErrClosed-like context
// errors from their own contexts; nothing is resolved by closing.
func (s *Store) Close() error { return s.db.Close() }

func key(sessionID, id string) []byte { return []byte(sessionID + "\x00" + id) }

// Add records a new pending approval (its SessionID and ID name it).
func (s *Store) Add(a agent.Approval) error {
	if a.ID == "" || a.SessionID == "" {
		return fmt.Errorf("approvals: an approval needs a session and an id")
	}
	if a.Created.IsZero() {
		a.Created = s.now()
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketName))
		k := key(a.SessionID, a.ID)
		if b.Get(k) != nil {
			return fmt.Errorf("%w: %s/%s", ErrExists, a.SessionID, a.ID)
		}
		return put(b, k, Record{Approval: a})
	})
}

func put(b *bolt.Bucket, k []byte, r Record) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.Put(k, v)
}

// Get returns one approval's record.
func (s *Store) Get(sessionID, id string) (Record, error) {
	var r Record
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte(bucketName)).Get(key(sessionID, id))
		if v == nil {
			return agent.ErrUnknownApproval
		}
		return json.Unmarshal(v, &r)
	})
	return r, err
}

// List returns the records that keep, oldest first.
func (s *Store) List(keep func(Record) bool) ([]Record, error) {
	var out []Record
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketName)).ForEach(func(_, v []byte) error {
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("approvals: a record does not decode: %w", err)
			}
			if keep == nil || keep(r) {
				out = append(out, r)
			}
			return nil
		})
	})
	slices.SortStableFunc(out, func(a, b Record) int { return a.Approval.Created.Compare(b.Approval.Created) })
	return out, err
}

// Pending lists every approval still waiting, across sessions.
func (s *Store) Pending() ([]Record, error) { return s.List(Record.Pending) }

// Resolve decides an approval. The first resolution wins and is returned;
// a later one gets *agent.AlreadyResolvedError carrying the first.
func (s *Store) Resolve(sessionID string, r agent.Resolution) (agent.Resolution, error) {
	if r.Decision != agent.Allow && r.Decision != agent.Deny {
		return agent.Resolution{}, fmt.Errorf("approvals: decision %q is neither allow nor deny", r.Decision)
	}
	if r.Cause == "" {
		r.Cause = agent.CauseClient
	}
	if r.At.IsZero() {
		r.At = s.now()
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketName))
		k := key(sessionID, r.ApprovalID)
		v := b.Get(k)
		if v == nil {
			return agent.ErrUnknownApproval
		}
		var rec Record
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		if rec.Resolution != nil {
			return &agent.AlreadyResolvedError{First: *rec.Resolution}
		}
		if err := rec.Approval.CheckAnswers(r); err != nil {
			return err // the approval stays open for a good answer
		}
		rec.Resolution = &r
		return put(b, k, rec)
	})
	if err != nil {
		return agent.Resolution{}, err
	}
	s.wake(sessionID, r)
	return r, nil
}

// wake hands a resolution to everyone waiting for it.
func (s *Store) wake(sessionID string, r agent.Resolution) {
	k := string(key(sessionID, r.ApprovalID))
	s.mu.Lock()
	waiters := s.waiters[k]
	delete(s.waiters, k)
	s.mu.Unlock()
	for _, w := range waiters {
		w <- r // buffered 1, sent once
	}
}

// Wait returns the approval's resolution, waiting for it if need be.
func (s *Store) Wait(ctx context.Context, sessionID, id string) (agent.Resolution, error) {
	w := make(chan agent.Resolution, 1)
	k := string(key(sessionID, id))
	s.mu.Lock()
	s.waiters[k] = append(s.waiters[k], w)
	s.mu.Unlock()
	defer s.forget(k, w)
	// Registered first, then read: a resolution between the two still
	// reaches w.
	rec, err := s.Get(sessionID, id)
	if err != nil {
		return agent.Resolution{}, err
	}
	if rec.Resolution != nil {
		return *rec.Resolution, nil
	}
	select {
	case r := <-w:
		return r, nil
	case <-ctx.Done():
		return agent.Resolution{}, ctx.Err()
	}
}

func (s *Store) forget(k string, w chan agent.Resolution) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiters[k] = slices.DeleteFunc(s.waiters[k], func(c chan agent.Resolution) bool { return c == w })
	if len(s.waiters[k]) == 0 {
		delete(s.waiters, k)
	}
}

// Expire resolves every pending approval whose expiry has come with its
// default decision (deny when it names none), cause expired, and returns
// those records, resolved. The runner calls it on a timer.
func (s *Store) Expire() ([]Record, error) {
	now := s.now()
	due, err := s.List(func(r Record) bool {
		return r.Pending() && !r.Approval.Expires.IsZero() && !r.Approval.Expires.After(now)
	})
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, rec := range due {
		d := rec.Approval.Default
		if d == "" {
			d = agent.Deny
		}
		r, err := s.Resolve(rec.Approval.SessionID, agent.Resolution{ApprovalID: rec.Approval.ID, Decision: d,
			Reason: "no decision before it expired", Cause: agent.CauseExpired, At: now})
		if errors.Is(err, agent.ErrAlreadyResolved) {
			continue // answered meanwhile: that answer stands
		}
		if err != nil {
			return out, err
		}
		rec.Resolution = &r
		out = append(out, rec)
	}
	return out, nil
}

// ResolveSession denies every pending approval of a session that can no
// longer act on it (its turn was interrupted or ended, the session closed,
// or the runner restarted without it), with that cause.
func (s *Store) ResolveSession(sessionID string, cause agent.Cause, reason string) ([]agent.Resolution, error) {
	open, err := s.List(func(r Record) bool { return r.Pending() && r.Approval.SessionID == sessionID })
	if err != nil {
		return nil, err
	}
	var out []agent.Resolution
	for _, rec := range open {
		r, err := s.Resolve(sessionID, agent.Resolution{ApprovalID: rec.Approval.ID, Decision: agent.Deny, Reason: reason, Cause: cause})
		if errors.Is(err, agent.ErrAlreadyResolved) {
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}
