package sessions

import (
	"context"
	"sync"
	"sync/atomic"
)

// paceWindow is how many logged events a pacing reader may not have sent
// on yet before its session stops taking its agent's output: less than a
// live reader's room, so a reader that paces never falls back to the log.
const paceWindow = subscriberRoom - 64

// Pacer is a reader that holds its session's agent back: while the reader
// has not sent on the events up to paceWindow before the last one logged,
// the session takes no more of the agent's output, and the agent waits for
// it as it would for a local host that reads slowly. Without one, a
// session's log takes whatever its agent writes, however far behind its
// readers are. A closing session is held back by nobody.
type Pacer struct {
	s    *session
	sent atomic.Uint64
	once sync.Once
}

// Pacing is a reader that holds its session's agent back: Sent says it
// has sent on every event up to seq, Close ends it. A Pacer is one; a
// fleet's reader of a session on another runner is another.
type Pacing interface {
	Sent(seq uint64)
	Close()
}

// Pace makes a reader that starts after seq `after` a pacer of session
// id; Close ends it. For a front end whose reader is the session's host,
// as protocol v1's is.
func (m *Manager) Pace(id string, after uint64) (Pacing, error) {
	s, err := m.get(id)
	if err != nil {
		return nil, err
	}
	p := &Pacer{s: s}
	p.sent.Store(after)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pacers == nil {
		s.pacers = map[*Pacer]bool{}
	}
	s.pacers[p] = true
	return p, nil
}

// Sent says the reader has sent on every event up to seq.
func (p *Pacer) Sent(seq uint64) {
	p.sent.Store(seq)
	p.s.paceSignal()
}

// Close ends the pacing: the session no longer waits for this reader.
func (p *Pacer) Close() {
	p.once.Do(func() {
		p.s.mu.Lock()
		delete(p.s.pacers, p)
		p.s.mu.Unlock()
		p.s.paceSignal()
	})
}

// paceSignal wakes a pump waiting for its pacers.
func (s *session) paceSignal() {
	select {
	case s.paced <- struct{}{}:
	default:
	}
}

// waitForPacers waits while a pacer is more than paceWindow events
// behind the log, until the session begins to close or ctx ends.
func (s *session) waitForPacers(ctx context.Context) {
	for s.behindPacer() {
		select {
		case <-s.paced:
		case <-s.unpaced:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (s *session) behindPacer() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.pacers {
		if s.rec.LastSeq > p.sent.Load()+paceWindow {
			return true
		}
	}
	return false
}

// stopPacing lets the session run free of its pacers from now on: what
// closes it (an interrupt's end, the agent's last events) must not wait
// for a reader.
func (s *session) stopPacing() {
	s.unpace.Do(func() { close(s.unpaced) })
}
