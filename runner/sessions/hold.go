package sessions

import (
	"context"
	"errors"
	"sync"
	"time"
)

// holds are the hosts attached to a session that ends without them
// (protocol v1's): while one holds it the session lives; once the last
// lets go it is closed after a grace period, unless one comes back. The
// core keeps them rather than a front end, so that a host which comes
// back through another runner of a fleet holds the same session.
type holds struct {
	mu    sync.Mutex
	n     int
	grace *time.Timer // running while nobody holds the session
}

// graceCloseTimeout bounds the close of a session whose grace ran out.
const graceCloseTimeout = 30 * time.Second

// Hold keeps session id alive for a host attached to it. Once every hold
// is released, the session is closed after grace unless it is held again
// meanwhile. release is safe to call more than once.
func (m *Manager) Hold(_ context.Context, id string, grace time.Duration) (release func(), err error) {
	s, err := m.get(id)
	if err != nil {
		return nil, err
	}
	s.holds.mu.Lock()
	s.holds.n++
	if s.holds.grace != nil {
		s.holds.grace.Stop()
	}
	s.holds.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { m.letGo(id, s, grace) }) }, nil
}

// letGo releases one hold of s, and starts its grace when it was the
// last, unless the runner is stopping (it closes every session itself).
func (m *Manager) letGo(id string, s *session, grace time.Duration) {
	stopping := m.ShuttingDown()
	s.holds.mu.Lock()
	defer s.holds.mu.Unlock()
	if s.holds.n--; s.holds.n > 0 || stopping {
		return
	}
	if s.holds.grace != nil {
		s.holds.grace.Stop()
	}
	s.holds.grace = time.AfterFunc(grace, func() { m.graceExpired(id, s) })
}

// graceExpired closes s if nobody came back to it and it is still the
// session under its id (not one reopened since).
func (m *Manager) graceExpired(id string, s *session) {
	s.holds.mu.Lock()
	held := s.holds.n > 0
	s.holds.mu.Unlock()
	if cur, err := m.get(id); held || err != nil || cur != s {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), graceCloseTimeout)
	defer cancel()
	if err := s.close(ctx); err != nil && !errors.Is(err, ErrNotFound) {
		m.log.Warn("session not closed after its grace period", "session", id, "err", err)
		return
	}
	m.log.Info("session closed: no host attached within the grace period", "session", id)
}

// stopGrace stops s's grace timer (the runner is stopping, and closes
// every session itself).
func (s *session) stopGrace() {
	s.holds.mu.Lock()
	defer s.holds.mu.Unlock()
	if s.holds.grace != nil {
		s.holds.grace.Stop()
	}
}

// claimInput reports whether a native client's input line numbered n is
// new to the session's agent, and records it; a line without a number
// (0) is always new. A host that comes back resends the lines it has no
// word of: those applied already are passed over.
func (s *session) claimInput(n uint64) bool {
	if n == 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= s.inputSeq {
		return false
	}
	s.inputSeq = n
	return true
}
