package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/tetherhq/tether/runner/eventlog/boltfile"
)

// SalvageReport is what Salvage saved of a damaged store, and what it
// could not read.
type SalvageReport struct {
	// Note says how the file had to be read ("" when as it is).
	Note string
	// Sessions are the sessions whose approvals were saved, sorted.
	Sessions []SessionSalvage
	// Lost are the parts of the store that could not be read, with the
	// keys (session and approval ids) they held, and records that do not
	// decode.
	Lost []string
}

// SessionSalvage is what Salvage saved of one session's approvals.
type SessionSalvage struct {
	Session string
	Saved   int // records saved
	Pending int // of which still waiting for a decision
	// Outside counts the records found outside the store's tree (the
	// page that held them was lost): they may be older than the store's
	// last state.
	Outside int
}

// Salvage reads what it can of the damaged store at src, never writing
// to it, and writes every approval record it could read into a new store
// at dst, which must not exist. A page that cannot be read costs the
// records on it; Salvage then looks through the pages the store's tree no
// longer reaches for those records (of two copies of a record, a resolved
// one wins). It fails only when it cannot read src at all, nor write
// dst; a src still in use fails with boltfile.ErrInUse.
func Salvage(ctx context.Context, src, dst string) (*SalvageReport, error) {
	f, osf, unusable, err := boltfile.OpenSalvage(src, dst)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	if osf != nil {
		defer osf.Close()
	}
	s := &salvager{ctx: ctx, records: map[string]found{}}
	if unusable != "" {
		s.report.Lost = append(s.report.Lost, "the whole file: "+unusable)
	} else if err := s.salvage(f); err != nil {
		return nil, err
	}
	if err := s.write(dst); err != nil {
		return nil, err
	}
	return &s.report, nil
}

// found is a record read, and whether from outside the tree.
type found struct {
	value   []byte
	rec     Record
	outside bool
}

type salvager struct {
	ctx     context.Context
	records map[string]found // by key
	report  SalvageReport
}

func (s *salvager) salvage(f *boltfile.File) error {
	s.report.Note = f.Note
	var bucket *boltfile.Bucket
	faults, err := f.Root().Walk(func(e boltfile.Entry) error {
		if e.Bucket != nil && string(e.Key) == bucketName {
			bucket = e.Bucket
		}
		return nil
	})
	if err != nil {
		return err
	}
	lost := s.lost(faults, "the store's top level")
	if bucket != nil {
		faults, err := bucket.Walk(func(e boltfile.Entry) error { return s.record(e, false) })
		if err != nil {
			return err
		}
		lost += s.lost(faults, "the approvals")
	}
	if lost == 0 && f.Note == "" { // the tree was whole, and the newest one
		return nil
	}
	return f.Unreached(func(leaf *boltfile.Bucket) error {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		_, err := leaf.Walk(func(e boltfile.Entry) error { return s.record(e, true) })
		return err
	})
}

// record keeps one record: one that decodes, under the key of its own
// session and id. A copy from outside the tree replaces nothing but a
// pending copy from outside too, with a resolved one.
func (s *salvager) record(e boltfile.Entry, outside bool) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	if e.Bucket != nil {
		return nil
	}
	var r Record
	err := json.Unmarshal(e.Value, &r)
	if err == nil && !bytes.Equal(e.Key, key(r.Approval.SessionID, r.Approval.ID)) {
		err = errors.New("its key is not its session's and id's")
	}
	if err != nil {
		if !outside { // outside, anything may be on a page
			s.report.Lost = append(s.report.Lost, fmt.Sprintf("the record under %q: it does not decode (%v)", e.Key, err))
		}
		return nil
	}
	k := string(e.Key)
	if old, ok := s.records[k]; ok && (!old.outside || !old.rec.Pending() || r.Pending()) {
		return nil
	}
	s.records[k] = found{bytes.Clone(e.Value), r, outside}
	return nil
}

// lost reports faults and returns how many.
func (s *salvager) lost(faults []boltfile.Fault, what string) int {
	for _, f := range faults {
		s.report.Lost = append(s.report.Lost, fmt.Sprintf("%s, %s: %s", what, keyBounds(f), f.Reason))
	}
	return len(faults)
}

// keyBounds says which records a fault lost.
func keyBounds(f boltfile.Fault) string {
	name := func(k []byte) string {
		session, id, _ := strings.Cut(string(k), "\x00")
		return fmt.Sprintf("approval %q of session %q", id, session)
	}
	switch {
	case f.From == nil && f.To == nil:
		return "all of them"
	case f.From == nil:
		return "those before " + name(f.To)
	case f.To == nil:
		return "those from " + name(f.From) + " on"
	}
	return "those from " + name(f.From) + " to before " + name(f.To)
}

// write writes the records kept into a new store at path, and fills the
// report's sessions.
func (s *salvager) write(path string) error {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return fmt.Errorf("approvals: salvage into %s: %w", path, err)
	}
	bySession := map[string]*SessionSalvage{}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte(bucketName))
		if err != nil {
			return err
		}
		for k, f := range s.records {
			if err := b.Put([]byte(k), f.value); err != nil {
				return err
			}
			id := f.rec.Approval.SessionID
			if bySession[id] == nil {
				bySession[id] = &SessionSalvage{Session: id}
			}
			ss := bySession[id]
			ss.Saved++
			if f.rec.Pending() {
				ss.Pending++
			}
			if f.outside {
				ss.Outside++
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path) // half a store is no use
		return fmt.Errorf("approvals: salvage into %s: %w", path, err)
	}
	for _, ss := range bySession {
		s.report.Sessions = append(s.report.Sessions, *ss)
	}
	slices.SortFunc(s.report.Sessions, func(a, b SessionSalvage) int { return strings.Compare(a.Session, b.Session) })
	return nil
}
