package eventlog

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Gaps
//
// A seq is never reused, but after a crash a reader may have seen events
// the log lost: appended (and sent on) but not yet committed. Skip lets the
// session's numbering go on after the reader's position instead of handing
// the lost seqs to new events; the seqs skipped form a gap, which Read
// passes over and which is stored with the session (sessions/<name>/gaps,
// pairs of big-endian seqs), so later readers pass over it too.

// gap is a range of seqs, from..to inclusive, that no event has.
type gap struct{ from, to uint64 }

// minEventCharge is what the smallest event (an empty payload) is charged
// while it waits for the disk.
const minEventCharge = recordHeader + eventOverhead

// maxGap is the most events this log can hold uncommitted, and so the most
// a crash can lose: a larger Skip is not explained by a crash.
func (l *Bolt) maxGap() uint64 {
	return uint64(l.opts.MaxPendingBytes/minEventCharge) + 1
}

// Skip moves the session's last seq up to `to` when it is below: the next
// Append gets to+1, and the seqs in between are a gap that Read passes
// over. It is for a reader that saw events this log no longer has (lost
// with a crash before their commit, see Read's ErrAhead): numbering goes
// on after what it saw, so no seq it saw is given to another event. A
// session already at or past `to` is left alone. Like Append, Skip is
// committed with the next group commit, and never after an event appended
// after it. It fails with ErrUnknownSession for a session the log does not
// have, and with ErrAhead when the gap is larger than the log could ever
// hold uncommitted (Options.MaxPendingBytes): no crash explains that.
func (l *Bolt) Skip(session string, to uint64) error {
	if err := checkName(session); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("eventlog: skip in %q: %w", session, ErrClosed)
	}
	s := l.sessions[session]
	if s == nil {
		return fmt.Errorf("eventlog: skip in %q: %w", session, ErrUnknownSession)
	}
	if to <= s.last {
		return nil
	}
	if to-s.last > l.maxGap() {
		return fmt.Errorf("%w: session %q: skip to %d from %d is more than a crash can lose (%d events)",
			ErrAhead, session, to, s.last, l.maxGap())
	}
	if n := len(s.gaps); n > 0 && s.gaps[n-1].to == s.last {
		// Extends the last gap: a new slice, since readers may hold the old.
		s.gaps = append(s.gaps[:n-1:n-1], gap{s.gaps[n-1].from, to})
	} else {
		s.gaps = append(s.gaps[:n:n], gap{s.last + 1, to})
	}
	s.last = to
	s.gapsVer++
	l.pend(s, 1, eventOverhead)
	return nil
}

// pend records n changes of s (events, metadata, a gap) for the next
// group commit to write, charged charge bytes (under l.mu).
func (l *Bolt) pend(s *sessionState, n uint64, charge int64) {
	s.tailBytes += charge
	l.pendingBytes += charge
	l.appended += n
	if !s.dirty {
		s.dirty = true
		l.dirty = append(l.dirty, s)
		if len(l.dirty) == 1 {
			l.pendingSince = time.Now()
			signal(l.wake)
		}
	}
}

// skipGaps returns seq, or the seq after the gap that holds it.
func skipGaps(gaps []gap, seq uint64) uint64 {
	for _, g := range gaps {
		if seq >= g.from && seq <= g.to {
			return g.to + 1
		}
	}
	return seq
}

// inGap reports whether the seqs from..to (inclusive) are all in one gap.
func inGap(gaps []gap, from, to uint64) bool {
	for _, g := range gaps {
		if from >= g.from && to <= g.to {
			return true
		}
	}
	return false
}

func encodeGaps(gaps []gap) []byte {
	b := make([]byte, 0, 16*len(gaps))
	for _, g := range gaps {
		b = binary.BigEndian.AppendUint64(b, g.from)
		b = binary.BigEndian.AppendUint64(b, g.to)
	}
	return b
}

func decodeGaps(b []byte) ([]gap, error) {
	if len(b)%16 != 0 {
		return nil, fmt.Errorf("%w: gaps record of %d bytes", ErrCorrupt, len(b))
	}
	gaps := make([]gap, 0, len(b)/16)
	for ; len(b) > 0; b = b[16:] {
		g := gap{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
		if g.from == 0 || g.to < g.from || (len(gaps) > 0 && g.from <= gaps[len(gaps)-1].to) {
			return nil, fmt.Errorf("%w: gap %d..%d out of order", ErrCorrupt, g.from, g.to)
		}
		gaps = append(gaps, g)
	}
	return gaps, nil
}
