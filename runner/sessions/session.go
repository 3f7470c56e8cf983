package sessions

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/safe"
	"github.com/tetherhq/tether/runner/workspace"
)

// session is one running canonical session: its agent, its workspace and
// the goroutine (pump) that logs its events.
type session struct {
	m     *Manager
	agent agent.Session
	ws    *workspace.Workspace
	// before is the workspace's snapshot from before the session, which
	// its diff is taken against; empty when there is none.
	before string

	mu   sync.Mutex
	info Info
	// subs are readers following live: each logged event is handed to
	// them from memory, so a live reader never waits on the log's disk.
	subs  map[*subscriber]bool
	ended bool
	// awaited counts prompts accepted whose turn has not started yet: a
	// shutdown's grace waits for their turns too.
	awaited int
	idle    chan struct{} // closed while no turn runs or is awaited
	done    chan struct{} // closed when the pump has logged the last event
	closing sync.Once
}

func newSession(m *Manager, info Info, a agent.Session, ws *workspace.Workspace) *session {
	s := &session{m: m, agent: a, ws: ws, info: info, done: make(chan struct{}), idle: make(chan struct{}),
		subs: map[*subscriber]bool{}}
	s.updateIdleLocked()
	return s
}

func (s *session) snapshot() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// pump logs every event of the agent, in order, before anyone can read
// it, and keeps the session's approvals and state in step.
func (s *session) pump() {
	defer s.m.wg.Done()
	defer close(s.done)
	defer s.release()
	reason, failure := s.relay(context.Background())
	// Whatever still waits for a decision can no longer be acted on.
	if _, err := s.m.cfg.Approvals.ResolveSession(s.info.ID, agent.CauseTurnEnded, "the session ended"); err != nil {
		s.m.log.Warn("approvals of an ended session", "session", s.info.ID, "agent", s.info.Agent, "err", err)
	}
	s.mu.Lock()
	s.info.State, s.info.TurnID = StateEnded, ""
	s.ended, s.awaited = true, 0
	s.updateIdleLocked()
	for sub := range s.subs { // everything was handed over: the end
		close(sub.ch)
		delete(s.subs, sub)
	}
	s.mu.Unlock()
	s.save()
	if failure != nil {
		s.m.log.Error("session ended", "session", s.info.ID, "agent", s.info.Agent, "reason", reason,
			"code", failure.Code, "err", failure.Message)
		return
	}
	s.m.log.Info("session ended", "session", s.info.ID, "agent", s.info.Agent, "reason", reason)
}

// relay logs the agent's events until its session.ended (or the end of
// its events), and says why the session ended and, if it failed, what
// ended it. A panic while relaying ends this session as failed, its agent
// closed, instead of the runner.
func (s *session) relay(ctx context.Context) (reason string, failure *agent.Error) {
	defer safe.Recover(s.m.log.With("session", s.info.ID, "agent", s.info.Agent), "session pump", func(p *safe.PanicError) {
		reason, failure = "error", &agent.Error{Code: agent.ErrorInternal, Message: p.Error()}
		_ = s.agent.Close()
		s.endInLog(ctx, failure)
	})
	for e, err := range s.agent.Events(ctx) {
		if err != nil {
			s.m.log.Warn("session events failed", "session", s.info.ID, "agent", s.info.Agent, "err", err)
			break
		}
		s.track(ctx, &e)
		if err := s.append(ctx, &e); err != nil {
			s.m.log.Error("session event not logged", "session", s.info.ID, "agent", s.info.Agent, "kind", e.Kind, "err", err)
		}
		if e.Kind == agent.KindSessionEnded {
			if e.Session != nil {
				reason = e.Session.Reason
			}
			return reason, e.Error
		}
	}
	return reason, nil
}

// endInLog logs the end of a session whose agent can no longer say it:
// its open turn failed, then session.ended, both with failure.
func (s *session) endInLog(ctx context.Context, failure *agent.Error) {
	var ends []agent.Event
	if info := s.snapshot(); info.State == StateRunning && info.TurnID != "" {
		ends = append(ends, agent.Event{Kind: agent.KindTurnCompleted, TurnID: info.TurnID,
			Turn: &agent.TurnInfo{Status: agent.TurnFailed}, Error: failure})
	}
	ends = append(ends, agent.Event{Kind: agent.KindSessionEnded,
		Session: &agent.SessionInfo{Agent: s.info.Agent, NativeID: s.agent.NativeID(), Reason: "error"}, Error: failure})
	for _, e := range ends {
		e.SessionID, e.Time = s.info.ID, time.Now()
		if err := s.append(ctx, &e); err != nil {
			s.m.log.Error("session end not logged", "session", s.info.ID, "agent", s.info.Agent, "err", err)
			return
		}
	}
}

// release snapshots the workspace as the session left it and lets it go.
func (s *session) release() {
	if s.before != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := s.ws.Snapshot(ctx, "tether: after session "+s.info.ID); err != nil {
			s.m.log.Warn("workspace snapshot failed", "session", s.info.ID, "agent", s.info.Agent, "err", err)
		}
		cancel()
	}
	s.ws.Release()
}

// diff is what changed in the workspace since the session began, while
// the session holds it; ok is false without a snapshot to compare with.
func (s *session) diff(ctx context.Context) (changes []agent.FileChange, ok bool, err error) {
	if s.before == "" {
		return nil, false, nil
	}
	files, err := s.ws.Diff(ctx, s.before)
	if errors.Is(err, workspace.ErrReleased) {
		return nil, false, nil // ended: the log and the agent answer
	}
	if err != nil {
		return nil, true, err
	}
	changes = make([]agent.FileChange, 0, len(files))
	for _, f := range files {
		kind := map[string]agent.ChangeKind{"added": agent.ChangeAdd, "deleted": agent.ChangeDelete}[f.Status]
		if kind == "" {
			kind = agent.ChangeUpdate
		}
		changes = append(changes, agent.FileChange{Path: f.Path, Kind: kind, Diff: f.Patch})
	}
	return changes, true, nil
}

// track updates state and approvals from one event.
func (s *session) track(ctx context.Context, e *agent.Event) {
	e.SessionID = s.info.ID
	switch e.Kind {
	case agent.KindSessionStarted:
		if e.Session != nil && e.Session.NativeID != "" {
			s.mu.Lock()
			changed := s.info.NativeID != e.Session.NativeID
			s.info.NativeID = e.Session.NativeID
			s.mu.Unlock()
			if changed {
				s.save()
			}
		}
	case agent.KindTurnStarted:
		s.setState(StateRunning, e.TurnID)
	case agent.KindTurnCompleted:
		s.setState(StateIdle, "")
	case agent.KindApprovalRequested:
		a := *e.Approval
		a.SessionID, a.Agent = s.info.ID, s.info.Agent
		if s.m.cfg.ApprovalTimeout > 0 && a.Expires.IsZero() {
			a.Expires, a.Default = a.Created.Add(s.m.cfg.ApprovalTimeout), agent.Deny
		}
		e.Approval = &a
		if err := s.m.cfg.Approvals.Add(a); err != nil {
			s.m.log.Error("approval not recorded", "session", s.info.ID, "agent", s.info.Agent, "approval", a.ID, "err", err)
		}
	case agent.KindApprovalResolved:
		// The agent settled it (an interrupt, say): the store learns it,
		// unless a client's answer came first, which stands.
		if _, err := s.m.cfg.Approvals.Resolve(s.info.ID, *e.Resolution); err != nil && !errors.Is(err, agent.ErrAlreadyResolved) {
			s.m.log.Warn("approval resolution not recorded", "session", s.info.ID, "agent", s.info.Agent, "err", err)
		}
	}
}

func (s *session) setState(st State, turn string) {
	s.mu.Lock()
	if s.info.State != StateEnded {
		s.info.State, s.info.TurnID = st, turn
	}
	if st == StateRunning {
		s.awaited = 0 // the turn a prompt was accepted for has started
	}
	s.updateIdleLocked()
	s.mu.Unlock()
	s.save()
}

// awaitTurn notes a prompt about to be handed to the agent; turnRefused
// takes it back when the agent refuses it.
func (s *session) awaitTurn() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.awaited++
	s.updateIdleLocked()
}

func (s *session) turnRefused() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.awaited = max(s.awaited-1, 0) // its turn may have started and ended meanwhile
	s.updateIdleLocked()
}

// updateIdleLocked opens or closes idle as the session is busy or not.
func (s *session) updateIdleLocked() {
	busy := !s.ended && (s.info.State == StateRunning || s.awaited > 0)
	select {
	case <-s.idle:
		if busy {
			s.idle = make(chan struct{})
		}
	default:
		if !busy {
			close(s.idle)
		}
	}
}

// idleNow is closed while no turn runs or is awaited.
func (s *session) idleNow() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idle
}

// finishTurn waits for the session's turn to end, or for ctx; then it
// interrupts a turn still running and waits a little for its end.
func (s *session) finishTurn(ctx context.Context) {
	select {
	case <-s.idleNow():
		return
	case <-ctx.Done():
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), interruptWait)
	defer cancel()
	if err := s.agent.Interrupt(ictx); err != nil {
		s.m.log.Warn("turn not interrupted at shutdown", "session", s.info.ID, "agent", s.info.Agent, "err", err)
		return // its close ends it
	}
	select {
	case <-s.idleNow():
	case <-ictx.Done():
	}
}

// save records the session's Info in the index.
func (s *session) save() {
	if err := s.m.index.save(s.snapshot()); err != nil {
		s.m.log.Warn("session not recorded in the index", "session", s.info.ID, "agent", s.info.Agent, "err", err)
	}
}

// append logs the event with its seq and wakes live readers.
func (s *session) append(ctx context.Context, e *agent.Event) error {
	seq, err := s.m.logEvent(ctx, s.info.Agent, s.info.ID, e)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.info.LastSeq = seq
	for sub := range s.subs {
		select {
		case sub.ch <- *e:
		default: // too far behind: it goes back to the log
			sub.lagged = true
			close(sub.ch)
			delete(s.subs, sub)
		}
	}
	s.mu.Unlock()
	return s.m.feed.append(ctx, s.m.cfg.Log, e)
}

// logEvent writes e to session id's log, numbers it with its seq and
// tells the observer: every event a session's log gets goes through here,
// a live session's and one a restart ends alike.
func (m *Manager) logEvent(ctx context.Context, agentKind, id string, e *agent.Event) (uint64, error) {
	payload, err := e.AppendJSON(nil)
	if err != nil {
		return 0, err
	}
	seq, err := m.cfg.Log.Append(ctx, id, payload)
	if err != nil {
		return 0, err
	}
	e.Seq = int64(seq)
	m.cfg.Observer.EventLogged(agentKind, e)
	return seq, nil
}

// subscriber is a live reader of a session.
type subscriber struct {
	ch     chan agent.Event
	lagged bool // set (under the session's mu) when it was dropped for falling behind
}

// subscribe registers a live reader; its channel closes when the session
// ends (lagged false) or the reader fell behind (lagged true).
func (s *session) subscribe() *subscriber {
	sub := &subscriber{ch: make(chan agent.Event, 4096)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		close(sub.ch)
		return sub
	}
	s.subs[sub] = true
	return sub
}

func (s *session) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[sub] {
		delete(s.subs, sub)
		close(sub.ch)
	}
}

func (s *session) lagged(sub *subscriber) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sub.lagged
}

// close ends the agent and waits for the pump to log its end.
func (s *session) close(ctx context.Context) error {
	var err error
	s.closing.Do(func() { err = s.agent.Close() })
	select {
	case <-s.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return err
}
