package eventlog

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/tetherhq/tether/runner/eventlog/boltfile"
)

// salvaged is a session being saved, from one tree of the log or two.
type salvaged struct {
	name     string
	w        *sessionWriter
	recordOK bool // its record was read
	meta     []byte
	hasMeta  bool
	gaps     []gap
	lastSeq  uint64
	saved    []SeqRange // the events written, in order, merged
	headLost bool       // a part before the first event saved was lost...
	headFrom uint64     // ...from this seq (0: unknown)
	previous bool
	problems []string
}

// sessionParts are what a session's bucket holds.
type sessionParts struct {
	meta    []byte
	hasMeta bool
	gaps    []byte
	events  *boltfile.Bucket
}

func readSessionParts(b *boltfile.Bucket) (sessionParts, []boltfile.Fault, error) {
	var p sessionParts
	faults, err := b.Walk(func(e boltfile.Entry) error {
		switch {
		case bytes.Equal(e.Key, bucketEvents) && e.Bucket != nil:
			p.events = e.Bucket
		case bytes.Equal(e.Key, keyMeta) && e.Bucket == nil:
			p.meta, p.hasMeta = bytes.Clone(e.Value), true
		case bytes.Equal(e.Key, keyGaps) && e.Bucket == nil:
			p.gaps = bytes.Clone(e.Value)
		}
		return nil
	})
	return p, faults, err
}

// session saves what a tree holds of a session and was not saved yet.
// newest: the log's newest tree, whose faults are reported.
func (s *salvager) session(name string, b *boltfile.Bucket, newest bool) error {
	ss := s.sessions[name]
	if ss == nil {
		ss = &salvaged{name: name, w: &sessionWriter{out: s.out, name: name}}
		s.sessions[name] = ss
	} else if ss.complete() {
		return nil
	}
	parts, faults, err := readSessionParts(b)
	if err != nil {
		return err
	}
	for _, f := range faults {
		ss.problem(newest, "its record: "+f.Reason)
	}
	if !ss.recordOK && len(faults) == 0 {
		ss.recordOK, ss.previous = true, ss.previous || !newest
	}
	if !ss.hasMeta && parts.hasMeta {
		ss.meta, ss.hasMeta = parts.meta, true
	}
	gaps, err := decodeGaps(parts.gaps)
	if err != nil {
		ss.problem(newest, fmt.Sprintf("its gaps: %v (dropped)", err))
	}
	ss.gaps = mergeGaps(ss.gaps, gaps)
	if parts.events == nil {
		return nil
	}
	ss.lastSeq = max(ss.lastSeq, parts.events.Sequence())
	before := ss.count()
	faults, err = parts.events.Walk(func(e boltfile.Entry) error { return ss.run(e, newest) })
	if err != nil {
		return err
	}
	if newest {
		ss.lostEvents(faults)
	}
	if ss.count() > before && !newest {
		ss.previous = true
	}
	return ss.w.flush()
}

// problem records what could not be read in the newest tree.
func (ss *salvaged) problem(newest bool, p string) {
	if newest {
		ss.problems = append(ss.problems, p)
	}
}

// run saves the events of one stored run that were not saved yet.
func (ss *salvaged) run(e boltfile.Entry, newest bool) error {
	if _, _, err := keyRange(e.Key); err != nil {
		ss.problem(newest, fmt.Sprintf("a value under a key that is not an event's (%x)", e.Key))
		return nil
	}
	v := e.Value
	if e.Bucket != nil {
		var faults []boltfile.Fault
		var err error
		if v, faults, err = runOf(e.Bucket); err != nil {
			return err
		}
		for _, f := range faults { // the run's key says which events it held
			ss.problem(newest, fmt.Sprintf("events %s: %s", keyText(e.Key), f.Reason))
		}
		if v == nil {
			if first, _, _ := keyRange(e.Key); newest && (len(ss.saved) == 0 || first < ss.saved[0].From) {
				ss.noteHead(first)
			}
			return nil
		}
	}
	err := eachStored(e.Key, v, func(seq uint64, t int64, payload []byte) bool {
		if ss.add(seq) {
			ss.w.add(newStoredRecord(seq, t, payload))
		}
		return true
	})
	if err != nil {
		ss.problem(newest, fmt.Sprintf("events %s: %v", keyText(e.Key), err))
	}
	return ss.w.flushIfFull()
}

// add records seq as saved, unless it was already: then it reports false.
func (ss *salvaged) add(seq uint64) bool {
	i, _ := slices.BinarySearchFunc(ss.saved, seq, func(r SeqRange, seq uint64) int { return cmp.Compare(r.To, seq) })
	switch {
	case i < len(ss.saved) && ss.saved[i].From <= seq:
		return false // within ss.saved[i]
	case i > 0 && ss.saved[i-1].To+1 == seq:
		ss.saved[i-1].To = seq
		if i < len(ss.saved) && ss.saved[i].From == seq+1 { // the hole between them is filled
			ss.saved[i-1].To = ss.saved[i].To
			ss.saved = slices.Delete(ss.saved, i, i+1)
		}
	case i < len(ss.saved) && ss.saved[i].From == seq+1:
		ss.saved[i].From = seq
	default:
		ss.saved = slices.Insert(ss.saved, i, SeqRange{seq, seq})
	}
	return true
}

func (ss *salvaged) count() (n int) {
	for _, r := range ss.saved {
		n += int(r.To - r.From + 1)
	}
	return n
}

// runOf reads the run of a run's own bucket.
func runOf(b *boltfile.Bucket) ([]byte, []boltfile.Fault, error) {
	var v []byte
	faults, err := b.Walk(func(e boltfile.Entry) error {
		if bytes.Equal(e.Key, keyRun) && e.Bucket == nil {
			v = e.Value
		}
		return nil
	})
	return v, faults, err
}

// lostEvents records the parts of the events bucket that could not be
// read.
func (ss *salvaged) lostEvents(faults []boltfile.Fault) {
	for _, f := range faults {
		from, to := "its first", "its last"
		if f.From != nil {
			from = keyText(f.From)
			if first, _, err := keyRange(f.From); err == nil && (len(ss.saved) == 0 || first < ss.saved[0].From) {
				ss.noteHead(first)
			}
		} else if len(ss.saved) == 0 {
			ss.noteHead(0)
		}
		if f.To != nil {
			to = keyText(f.To)
		}
		ss.problems = append(ss.problems, fmt.Sprintf("events from %s to %s: %s", from, to, f.Reason))
	}
}

// noteHead records a part lost before any event saved, from seq (0:
// unknown).
func (ss *salvaged) noteHead(seq uint64) {
	if !ss.headLost || seq < ss.headFrom {
		ss.headFrom = seq
	}
	ss.headLost = true
}

func (ss *salvaged) complete() bool { return ss.recordOK && len(ss.missing()) == 0 }

// missing are the events of the session that were not saved: before the
// first one saved when a lost part was there, between those saved, and
// after the last one up to the last seq; the session's gaps never held
// any.
func (ss *salvaged) missing() []SeqRange {
	var out []SeqRange
	if ss.headLost {
		to := ss.lastSeq
		if len(ss.saved) > 0 {
			to = ss.saved[0].From - 1
		}
		if to >= ss.headFrom && to > 0 {
			out = append(out, SeqRange{ss.headFrom, to})
		}
	}
	for i := 1; i < len(ss.saved); i++ {
		out = append(out, SeqRange{ss.saved[i-1].To + 1, ss.saved[i].From - 1})
	}
	if n := len(ss.saved); n > 0 && ss.lastSeq > ss.saved[n-1].To {
		out = append(out, SeqRange{ss.saved[n-1].To + 1, ss.lastSeq})
	}
	var kept []SeqRange
	for _, r := range out {
		kept = append(kept, outsideGaps(r, ss.gaps)...)
	}
	return kept
}

// finish writes the session's record (metadata, gaps, last seq) and
// returns its report.
func (ss *salvaged) finish() (SessionSalvage, error) {
	rep := SessionSalvage{Name: ss.name, Saved: ss.count(), LastSeq: ss.lastSeq, Missing: ss.missing(),
		Meta: ss.hasMeta, RecordLost: !ss.recordOK, Previous: ss.previous, Problems: ss.problems}
	if n := len(ss.saved); n > 0 {
		rep.First, rep.Last = ss.saved[0].From, ss.saved[n-1].To
		rep.LastSeq = max(rep.LastSeq, rep.Last)
	}
	// The events missing after the first one saved are gaps, which Read
	// passes over; those before it are left out, as if retention had
	// dropped them.
	gaps := ss.gaps
	for _, m := range rep.Missing {
		if rep.First > 0 && m.From > rep.First {
			gaps = mergeGaps(gaps, []gap{{m.From, m.To}})
		}
	}
	return rep, ss.w.finish(ss.meta, ss.hasMeta, gaps, rep.LastSeq)
}

// outsideGaps is r without the seqs gaps hold.
func outsideGaps(r SeqRange, gaps []gap) []SeqRange {
	var out []SeqRange
	from := r.From
	for _, g := range gaps {
		if g.to < from || g.from > r.To {
			continue
		}
		if g.from > from {
			out = append(out, SeqRange{from, g.from - 1})
		}
		from = g.to + 1
	}
	if from <= r.To && from >= r.From {
		out = append(out, SeqRange{from, r.To})
	}
	return out
}

// mergeGaps is the union of two lists of gaps, sorted, touching ones
// made one.
func mergeGaps(a, b []gap) []gap {
	all := slices.Concat(a, b)
	slices.SortFunc(all, func(x, y gap) int { return cmp.Compare(x.from, y.from) })
	var out []gap
	for _, g := range all {
		if n := len(out); n > 0 && g.from <= out[n-1].to+1 {
			out[n-1].to = max(out[n-1].to, g.to)
			continue
		}
		out = append(out, g)
	}
	return out
}

// keyText is how a report names the events of a key.
func keyText(k []byte) string {
	first, last, err := keyRange(k)
	switch {
	case err != nil:
		return fmt.Sprintf("key %x", k)
	case first == last:
		return fmt.Sprintf("%d", first)
	}
	return fmt.Sprintf("%d..%d", first, last)
}

// sessionWriter writes a salvaged session into the new log, its events
// in batches.
type sessionWriter struct {
	out     *bolt.DB
	name    string
	pending []record
	size    int
}

func (w *sessionWriter) add(r record) {
	w.pending = append(w.pending, r)
	w.size += len(r)
}

func (w *sessionWriter) flushIfFull() error {
	if w.size < salvageBatch {
		return nil
	}
	return w.flush()
}

// flush writes the events gathered, which are in seq order.
func (w *sessionWriter) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	err := w.out.Update(func(tx *bolt.Tx) error {
		sb, err := sessionBucket(tx.Bucket(bucketSessions), w.name)
		if err != nil {
			return err
		}
		return putEvents(sb.Bucket(bucketEvents), w.pending, w.pending[0].seq())
	})
	if err != nil {
		return fmt.Errorf("eventlog: salvage: write session %q: %w", w.name, err)
	}
	w.pending, w.size = nil, 0
	return nil
}

// finish writes the session's metadata, gaps and last seq.
func (w *sessionWriter) finish(meta []byte, hasMeta bool, gaps []gap, lastSeq uint64) error {
	err := w.out.Update(func(tx *bolt.Tx) error {
		sb, err := sessionBucket(tx.Bucket(bucketSessions), w.name)
		if err != nil {
			return err
		}
		if hasMeta {
			if err := sb.Put(keyMeta, meta); err != nil {
				return err
			}
		}
		if len(gaps) > 0 {
			if err := sb.Put(keyGaps, encodeGaps(gaps)); err != nil {
				return err
			}
		}
		return sb.Bucket(bucketEvents).SetSequence(lastSeq)
	})
	if err != nil {
		return fmt.Errorf("eventlog: salvage: write session %q: %w", w.name, err)
	}
	return nil
}
