package runner

import (
	"context"
	"iter"
	"sync"
	"time"

	"github.com/tetherhq/tether/internal/safe"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/workspace"
)

// Session is one conversation with one agent in one workspace. It outlives
// connections: see Attach.
type Session struct {
	r           *Runner
	id          string
	workspaceID string
	ws          *workspace.Workspace
	agent       Agent
	prep        *preparation

	ctx    context.Context // ends with the session
	cancel context.CancelFunc

	changedMu sync.Mutex
	changed   chan struct{} // closed and replaced on every append

	mu       sync.Mutex
	attached int
	grace    *time.Timer
	busy     int
	idle     chan struct{} // closed while no turn is in progress

	ended     chan struct{}
	endOnce   sync.Once
	endReason string
}

func newSession(r *Runner, id, workspaceID string, ws *workspace.Workspace, agent Agent, prep *preparation) *Session {
	s := &Session{
		r: r, id: id, workspaceID: workspaceID, ws: ws, agent: agent, prep: prep,
		changed: make(chan struct{}), idle: make(chan struct{}), ended: make(chan struct{}),
	}
	close(s.idle)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// Nobody is attached yet: the grace period runs from the start. The
	// timer's function reads s.grace (End stops it): set it under mu.
	s.mu.Lock()
	s.grace = time.AfterFunc(r.cfg.GracePeriod, s.graceExpired)
	s.mu.Unlock()
	return s
}

// ID is the session id (the agent's conversation id).
func (s *Session) ID() string { return s.id }

// WorkspaceID is the workspace the session holds.
func (s *Session) WorkspaceID() string { return s.workspaceID }

// Agent is the session's agent.
func (s *Session) Agent() Agent { return s.agent }

// Context ends when the session ends.
func (s *Session) Context() context.Context { return s.ctx }

// Prepared waits until the workspace is ready for the agent to change it:
// its repository made and the "before" snapshot taken, both started with
// the agent. A front end calls it before anything from the host reaches
// the agent. It returns an error matching ErrWorkspace if the repository
// could not be made (the session cannot keep its history), or ctx's.
func (s *Session) Prepared(ctx context.Context) error {
	select {
	case <-s.prep.done:
		return s.prep.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Go runs fn for the session's life (a front end's pump from the agent to
// the log); fn's context ends with the session, and fn must return then.
// Runner.Shutdown waits for every fn. On a session already over, fn runs
// at once, in the caller's goroutine, with its context already done.
func (s *Session) Go(fn func(ctx context.Context)) {
	s.mu.Lock()
	if s.ctx.Err() != nil { // End cancels under mu: nothing is added after
		s.mu.Unlock()
		fn(s.ctx)
		return
	}
	s.r.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.r.wg.Done()
		// A panic in fn ends this session, not the runner.
		defer safe.Recover(s.r.log.With("session", s.id), "session pump", func(*safe.PanicError) { s.End("error") })
		fn(s.ctx)
	}()
}

// Append logs one event and wakes whoever follows the session.
func (s *Session) Append(ctx context.Context, payload []byte) (uint64, error) {
	one := [1][]byte{payload}
	return s.AppendBatch(ctx, one[:])
}

// AppendBatch logs events with consecutive seqs, all or none, and wakes
// whoever follows the session once. It returns the first seq.
func (s *Session) AppendBatch(ctx context.Context, payloads [][]byte) (uint64, error) {
	seq, err := s.r.cfg.Log.AppendBatch(ctx, s.id, payloads)
	if err != nil {
		return 0, err
	}
	s.changedMu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.changedMu.Unlock()
	return seq, nil
}

func (s *Session) changes() <-chan struct{} {
	s.changedMu.Lock()
	defer s.changedMu.Unlock()
	return s.changed
}

// Events yields every event after seq `after`, then live ones as they are
// appended, exactly once and in order, until ctx ends or the session ends
// (after its last event). Payloads may be the log's own memory: they are
// not to be modified.
func (s *Session) Events(ctx context.Context, after uint64) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		for group, err := range s.EventGroups(ctx, after, 1, 0) {
			if err != nil {
				yield(eventlog.Event{}, err)
				return
			}
			if !yield(group[0], nil) {
				return
			}
		}
	}
}

// keepGroup is the most events EventGroups keeps room for once a follower
// has caught up.
const keepGroup = 32

// EventGroups is Events in groups of at most maxEvents events and, unless
// a single event is larger, maxBytes of payload (0: no byte limit). A
// group holds only events already logged when it is read, so a follower
// that is behind catches up in a few large groups and one that keeps up
// gets each event as soon as it is appended. The group's slice is reused
// by the next one.
func (s *Session) EventGroups(ctx context.Context, after uint64, maxEvents, maxBytes int) iter.Seq2[[]eventlog.Event, error] {
	return func(yield func([]eventlog.Event, error) bool) {
		next := after
		var group []eventlog.Event
		size := 0
		flush := func() bool {
			if len(group) == 0 {
				return true
			}
			ok := yield(group, nil)
			next = group[len(group)-1].Seq
			clear(group) // let the payloads go
			if cap(group) > keepGroup && len(group) < keepGroup/4 {
				group = nil // caught up: keep no room for a long replay
			}
			group, size = group[:0], 0
			return ok
		}
		for {
			wake := s.changes() // taken before reading: no append is missed
			for ev, err := range s.r.cfg.Log.ReadShared(ctx, s.id, next) {
				if err != nil {
					if flush() {
						yield(nil, err)
					}
					return
				}
				if len(group) > 0 && maxBytes > 0 && size+len(ev.Payload) > maxBytes && !flush() {
					return
				}
				group = append(group, ev)
				size += len(ev.Payload)
				if len(group) >= maxEvents && !flush() {
					return
				}
			}
			if !flush() {
				return
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			case <-s.ended:
				if s.drained(ctx, next) {
					return
				}
			}
		}
	}
}

// drained reports whether nothing was appended after seq `last`.
func (s *Session) drained(ctx context.Context, last uint64) bool {
	cur, err := s.r.cfg.Log.Last(s.id)
	return err != nil || cur <= last || ctx.Err() != nil
}

// Attach marks a connection as following the session: the grace timer
// stops. The returned detach restarts it unless the session is over.
func (s *Session) Attach() (detach func()) {
	s.mu.Lock()
	s.attached++
	s.grace.Stop()
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.attached--
			if s.attached == 0 && !s.isEnded() {
				s.grace.Reset(s.r.cfg.GracePeriod)
			}
		})
	}
}

func (s *Session) graceExpired() {
	s.mu.Lock()
	attached := s.attached
	s.mu.Unlock()
	if attached == 0 {
		s.End("no host attached within the grace period")
	}
}

// TurnStarted and TurnEnded let shutdown wait for turns in progress.
func (s *Session) TurnStarted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy == 0 {
		s.idle = make(chan struct{})
	}
	s.busy++
}

// TurnEnded marks the end of a turn started with TurnStarted.
func (s *Session) TurnEnded() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy == 0 {
		return
	}
	s.busy--
	if s.busy == 0 {
		close(s.idle)
	}
}

// Idle is closed while no turn is in progress.
func (s *Session) Idle() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idle
}

func (s *Session) isEnded() bool {
	select {
	case <-s.ended:
		return true
	default:
		return false
	}
}

// Ended is closed once the session is over.
func (s *Session) Ended() <-chan struct{} { return s.ended }

// EndReason says why the session ended.
func (s *Session) EndReason() string {
	<-s.ended
	return s.endReason
}

// End stops the agent, cancels the session's Go functions, snapshots and
// releases the workspace. The log keeps the session for a later resume.
// It is idempotent and safe from any goroutine, the session's own included.
func (s *Session) End(reason string) {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.grace.Stop()
		s.endReason = reason
		// Cancel before closing the agent: the session's Go functions then
		// see the session ending, not the agent's output ending, and do
		// not report an ended session as an agent that exited. Under mu,
		// so Go starts no function after this.
		s.cancel()
		s.mu.Unlock()
		_ = s.agent.Close()
		<-s.prep.done // bounded by the git timeout; the session owns it
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := s.ws.Snapshot(ctx, "tether: after session "+s.id); err != nil {
			s.r.log.Warn("workspace snapshot failed", "session", s.id, "err", err)
		}
		s.ws.Release()
		s.r.release(s.id, s)
		s.r.log.Info("session ended", "session", s.id, "reason", reason)
		close(s.ended)
	})
}
