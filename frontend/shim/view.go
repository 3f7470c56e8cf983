package shim

import (
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

// The stream of WS /events is a view over the core's log: each reader
// reads a run's canonical events from its session's log and maps them as
// the run's pump did, with the run's marks (the events of the shim's own)
// put in, and numbers what it makes. Nothing of a run's events is kept
// but the log: every reader makes the same envelopes, ids and sequences
// from it, in this process or a later one.

// readBatch is how many canonical events a reader takes from the log at
// once.
const readBatch = 256

// follow sends every envelope after c, run after run, then each new one
// as it is decided, until ctx ends or send fails.
func (s *Server) follow(ctx context.Context, c cursor, send func([]byte) error) error {
	for n := c.run; ; n++ {
		e, err := s.awaitRun(ctx, n)
		if err != nil {
			return err
		}
		skip := int64(0)
		if n == c.run {
			skip = c.seq
		}
		err = s.generate(ctx, e, skip, func(seq int64, at time.Time, ev Event) error {
			if err := send(encodeEnvelope(e.rec.ID, e.rec.AgentID, seq, at, ev)); err != nil {
				return err
			}
			s.runs.delivered(cursor{run: n, seq: seq})
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// awaitRun is run number n once it begins; ErrGone once it is let go.
func (s *Server) awaitRun(ctx context.Context, n int64) (*runEntry, error) {
	for {
		s.runs.mu.Lock()
		woken := s.runs.woken
		s.runs.mu.Unlock()
		e, ok := s.runs.entry(n)
		switch {
		case ok && e == nil:
			return nil, fmt.Errorf("%w: the client fell behind the %d runs kept", ErrGone, s.runs.max)
		case ok:
			return e, nil
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// countRun counts the events of a run of an earlier process.
func (s *Server) countRun(ctx context.Context, e *runEntry) (int64, error) {
	n := int64(0)
	err := s.generate(ctx, e, 0, func(seq int64, _ time.Time, _ Event) error { n = seq; return nil })
	return n, err
}

// generate hands out the run's events after the first skip, numbered,
// in order, each once its pump has decided it: the marks before any
// canonical event, then each canonical event's AgentEvents (or what
// replaces them) and the marks after it, then the marks after the run's
// end, until the run is sealed. A reader that skips starts at the run's
// last checkpoint before its place, not at the run's start.
func (s *Server) generate(ctx context.Context, e *runEntry, skip int64, out func(int64, time.Time, Event) error) error {
	g := &generation{s: s, e: e, skip: skip, out: out, mapper: newMapper(e.rec.AgentID, e.rec.Workstream, e.rec.ID)}
	if cp, ok := s.runs.checkpointFor(e, skip); ok {
		g.mapper.restore(cp.mapper)
		g.seq, g.marks, g.after = cp.count, cp.marks, cp.seq
	} else {
		ok, err := g.await(ctx, 0)
		if err != nil {
			return err
		}
		if !ok {
			return g.trailing(ctx)
		}
		if err := g.marksUpTo(0); err != nil {
			return err
		}
	}
	if err := g.canonical(ctx); err != nil {
		return err
	}
	return g.trailing(ctx)
}

// generation is one reader's making of one run's stream.
type generation struct {
	s      *Server
	e      *runEntry
	skip   int64 // events not handed out
	out    func(int64, time.Time, Event) error
	mapper *mapper
	seq    int64 // the stream's events so far
	marks  int   // how many of the run's marks were put in (or passed)
	after  int64 // the canonical seq the log is read after
}

// put numbers one event and hands it out, past the skipped ones.
func (g *generation) put(at time.Time, ev Event) error {
	g.seq++
	if g.seq <= g.skip {
		return nil
	}
	return g.out(g.seq, at, ev)
}

// await waits until the pump has decided canonical seq; false when the
// run's stream ends before it (the shim cut it there, or the pump ended
// without deciding it: the log could not be read).
func (g *generation) await(ctx context.Context, seq uint64) (bool, error) {
	rs := g.s.runs
	for {
		rs.mu.Lock()
		cut, decided, final, woken := g.e.rec.Cut, g.e.decided, g.e.final, rs.woken
		rs.mu.Unlock()
		switch {
		case cut != nil && int64(seq) > *cut:
			return false, nil
		case decided >= int64(seq):
			return true, nil
		case final:
			return false, nil
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// shown is the run's marks readers may see.
func (g *generation) shown() []mark {
	g.s.runs.mu.Lock()
	defer g.s.runs.mu.Unlock()
	return g.e.rec.Marks[:g.e.shown]
}

// marksUpTo puts in the marks after canonical event `after` and before.
func (g *generation) marksUpTo(after uint64) error {
	shown := g.shown()
	for ; g.marks < len(shown) && shown[g.marks].After <= after; g.marks++ {
		m := shown[g.marks]
		if m.Replace {
			continue
		}
		for _, ev := range m.Events {
			if err := g.put(m.At, ev); err != nil {
				return err
			}
		}
	}
	return nil
}

// canonical hands out the run's canonical events, read from its
// session's log, until the session's last one or the run's end (its cut,
// or the last its pump decided).
func (g *generation) canonical(ctx context.Context) error {
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var at atomic.Int64 // the last canonical seq handed out
	at.Store(g.after)
	go func() { // a run that ends while its session lives on: stop waiting for the session
		select {
		case <-g.e.ending:
			if end, _ := g.end(); at.Load() >= end {
				stop()
			}
		case <-rctx.Done():
		}
	}()
	for group, err := range g.s.cfg.Sessions.EventGroups(rctx, g.e.rec.SessionID, uint64(g.after), readBatch) {
		if err != nil {
			if ctx.Err() == nil && rctx.Err() != nil { // stopped at the run's end
				return nil
			}
			return goneIfLost(g.e.rec.ID, err)
		}
		for _, ce := range group {
			ok, err := g.await(ctx, uint64(ce.Seq))
			if err != nil || !ok {
				return err
			}
			for _, ev := range g.expand(ce) {
				if err := g.put(ce.Time, ev); err != nil {
					return err
				}
			}
			if err := g.marksUpTo(uint64(ce.Seq)); err != nil {
				return err
			}
			at.Store(ce.Seq)
			if end, known := g.end(); known && ce.Seq >= end {
				return nil
			}
		}
	}
	return nil
}

// end is the run's last canonical seq, once it is known.
func (g *generation) end() (int64, bool) {
	g.s.runs.mu.Lock()
	defer g.s.runs.mu.Unlock()
	return g.e.end()
}

// goneIfLost says ErrGone for a run whose session the log no longer has
// from its start (retention) or at all (a core that forgot it).
func goneIfLost(run string, err error) error {
	if errors.Is(err, eventlog.ErrTruncated) || errors.Is(err, sessions.ErrNotFound) {
		return fmt.Errorf("%w: the log no longer has run %s: %w", ErrGone, run, err)
	}
	return err
}

// expand is one canonical event's AgentEvents in the run's stream: as
// mapped, with the backend's uris of uploaded artifacts, or what the
// pump put in their place.
func (g *generation) expand(ce agent.Event) []Event {
	m := g.mapper.Map(ce)
	rs := g.s.runs
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, mk := range g.e.rec.Marks[:g.e.shown] {
		if mk.Replace && mk.After == uint64(ce.Seq) {
			return mk.Events
		}
	}
	for i := range m.artifacts {
		if uri, ok := g.e.rec.URIs[m.events[i]["artifactId"].(string)]; ok {
			m.events[i]["uri"] = uri
		}
	}
	return m.events
}

// trailing puts in the marks after the run's end as they come, until the
// run is sealed.
func (g *generation) trailing(ctx context.Context) error {
	rs := g.s.runs
	for {
		if err := g.marksUpTo(endOfRun); err != nil {
			return err
		}
		rs.mu.Lock()
		done := g.e.sealed && g.marks >= g.e.shown
		woken := rs.woken
		rs.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// encodeEnvelope is the envelope of event seq of a run, encoded. Its
// sourceEventId is made from the run's id and the sequence, so every
// reader sends the same. An event JSON cannot hold says so in an error
// event, never dropped silently.
func encodeEnvelope(run, agentID string, seq int64, at time.Time, ev Event) []byte {
	env := Envelope{SourceEventID: derivedID(run, "event", strconv.FormatInt(seq, 10)), SourceSequence: seq,
		SourceOccurredAt: utc(at), RunID: run, Event: ev}
	frame, err := json.Marshal(env)
	if err != nil {
		env.Event = Event{"type": "error", "agentId": agentID, "severity": "warning",
			"message": clip("event not encodable: " + err.Error()), "category": "internal", "recoverable": true}
		frame, _ = json.Marshal(env)
	}
	return frame
}

// derivedID is a UUID (version 5's layout) made from parts: the same
// parts, the same id, in every reader and every process.
func derivedID(parts ...string) string {
	sum := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
