package eventlog

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/tetherhq/tether/runner/eventlog/boltfile"
)

// SalvageReport is what Salvage saved of a damaged log, and what it could
// not read.
type SalvageReport struct {
	// Note says how the file had to be read ("" when as it is).
	Note string
	// Sessions are those saved, sorted by name.
	Sessions []SessionSalvage
	// Lost are the parts of the log lost with no session to name: the
	// sessions listed on a page that could not be read, for one.
	Lost []string
}

// SessionSalvage is what Salvage saved of one session.
type SessionSalvage struct {
	Name  string
	Saved int // events saved
	// First and Last are the seqs of the first and last event saved (0
	// when none was).
	First, Last uint64
	// LastSeq is the session's last seq as the log had it (0 when its
	// record could not be read): its numbering goes on after it in the
	// new log.
	LastSeq uint64
	// Missing are the events the session had that could not be read: the
	// new log passes over them (gaps) when they are between or after
	// events it has. From 0 means "from an unknown seq" (events before
	// the first one saved, which retention may have dropped already).
	Missing []SeqRange
	Meta    bool // its metadata was saved
	// RecordLost is set when the session's own record (its last seq,
	// metadata and gaps) could not be read.
	RecordLost bool
	// Previous is set when some of what was saved was read from the log
	// as its transaction before the last one left it.
	Previous bool
	// Problems say what could not be read, and why.
	Problems []string
}

// Complete reports whether everything of the session was saved.
func (s SessionSalvage) Complete() bool { return len(s.Missing) == 0 && !s.RecordLost }

// SeqRange is the seqs From..To, both included.
type SeqRange struct{ From, To uint64 }

// salvageBatch is how many bytes of events Salvage gathers before it
// writes them: memory stays bounded whatever a session holds.
const salvageBatch = 8 << 20

// Salvage reads what it can of the damaged log at src, never writing to it,
// and writes every session and event it could read into a new log at dst,
// which must not exist, with their seqs, times and metadata. A page that
// cannot be read costs what it held, and what only it led to (the events
// on it, or the sessions it listed), unless the log as its transaction
// before the last one left it still has them (see boltfile's Previous):
// then they are saved as they were then. Pages no tree reaches are not
// searched: bbolt reuses free pages for anything, so an old copy of a
// session found there may lead to another session's events. Events it
// could not read become gaps of their session in the new log, so its
// numbering goes on after the last seq the damaged log had. It fails only
// when it cannot read src at all, nor write dst (which it then removes); a
// src still in use fails with boltfile.ErrInUse.
func Salvage(ctx context.Context, src, dst string) (*SalvageReport, error) {
	f, osf, unusable, err := boltfile.OpenSalvage(src, dst)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	if osf != nil {
		defer osf.Close()
	}
	out, err := createSalvaged(dst)
	if err != nil {
		return nil, err
	}
	s := &salvager{ctx: ctx, out: out, sessions: map[string]*salvaged{}}
	if unusable != "" {
		s.report.Lost = append(s.report.Lost, "the whole file: "+unusable)
	} else {
		s.report.Note = f.Note
		err = s.salvage(f)
	}
	if err == nil {
		err = s.finish()
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("eventlog: salvage into %s: %w", dst, cerr)
	}
	if err != nil {
		_ = os.Remove(dst) // half a log is no use
		return nil, err
	}
	return &s.report, nil
}

// createSalvaged creates the new log, empty, as Open would.
func createSalvaged(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType, NoFreelistSync: true})
	if err != nil {
		return nil, fmt.Errorf("eventlog: salvage into %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		info, err := tx.CreateBucket(bucketInfo)
		if err != nil {
			return err
		}
		if err := info.Put(keyFormat, formatVersion); err != nil {
			return err
		}
		_, err = tx.CreateBucket(bucketSessions)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("eventlog: salvage into %s: %w", path, err)
	}
	return db, nil
}

type salvager struct {
	ctx      context.Context
	out      *bolt.DB
	sessions map[string]*salvaged
	report   SalvageReport
	lost     bool // a part of the log's tree could not be read
}

// salvage saves the sessions the log's tree leads to; when part of it
// could not be read, it reads the tree the transaction before left for
// what that part held.
func (s *salvager) salvage(f *boltfile.File) error {
	if err := s.tree(f.Root(), true); err != nil {
		return err
	}
	if prev := f.Previous(); prev != nil && s.incomplete() {
		return s.tree(prev, false)
	}
	return nil
}

// incomplete reports whether something of the log was not saved.
func (s *salvager) incomplete() bool {
	for _, ss := range s.sessions {
		if !ss.complete() {
			return true
		}
	}
	return s.lost
}

// tree saves what a tree of the log holds that was not saved yet. Only
// the newest tree's faults are reported: the previous one is read for what
// the newest lost.
func (s *salvager) tree(root *boltfile.Bucket, newest bool) error {
	var sessions *boltfile.Bucket
	faults, err := root.Walk(func(e boltfile.Entry) error {
		switch {
		case e.Bucket == nil:
		case bytes.Equal(e.Key, bucketSessions):
			sessions = e.Bucket
		case bytes.Equal(e.Key, bucketInfo):
			return checkFormat(e.Bucket)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if newest {
		s.lostParts(faults, "the log's top level")
	}
	if sessions == nil {
		if newest && len(faults) == 0 {
			s.report.Lost = append(s.report.Lost, "the list of sessions: the log has none")
		}
		return nil
	}
	faults, err = sessions.Walk(func(e boltfile.Entry) error {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		if e.Bucket == nil {
			return nil
		}
		return s.session(string(e.Key), e.Bucket, newest)
	})
	if err != nil {
		return err
	}
	if newest {
		s.lostParts(faults, "the list of sessions")
	}
	return nil
}

// checkFormat refuses a log of a format this version does not know: its
// records would be misread.
func checkFormat(info *boltfile.Bucket) error {
	_, err := info.Walk(func(e boltfile.Entry) error {
		known := [][]byte{formatV1, formatV2, formatVersion}
		if bytes.Equal(e.Key, keyFormat) && !slices.ContainsFunc(known, func(v []byte) bool { return bytes.Equal(v, e.Value) }) {
			return fmt.Errorf("eventlog: salvage: %w %q (a newer version's log: salvage it with that version)", errUnknownFormat, e.Value)
		}
		return nil
	})
	return err
}

// lostParts records faults of a part of the log outside any session.
func (s *salvager) lostParts(faults []boltfile.Fault, what string) {
	for _, f := range faults {
		s.lost = true
		s.report.Lost = append(s.report.Lost, fmt.Sprintf("%s, %s: %s", what, keyBounds(f), f.Reason))
	}
}

// keyBounds says which keys a fault of a list of sessions lost.
func keyBounds(f boltfile.Fault) string {
	switch {
	case f.From == nil && f.To == nil:
		return "all of it"
	case f.From == nil:
		return fmt.Sprintf("the names before %q", f.To)
	case f.To == nil:
		return fmt.Sprintf("the names from %q on", f.From)
	}
	return fmt.Sprintf("the names from %q to before %q", f.From, f.To)
}

// finish writes what is left of every session and reports it.
func (s *salvager) finish() error {
	for _, ss := range s.sessions {
		rep, err := ss.finish()
		if err != nil {
			return err
		}
		s.report.Sessions = append(s.report.Sessions, rep)
	}
	slices.SortFunc(s.report.Sessions, func(a, b SessionSalvage) int { return strings.Compare(a.Name, b.Name) })
	return nil
}
