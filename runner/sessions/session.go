package sessions

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/jsonscan"
	"github.com/tetherhq/tether/internal/safe"
	"github.com/tetherhq/tether/runner/workspace"
)

// session is one running canonical session: its agent, its workspace and
// the goroutine (pump) that logs its events.
type session struct {
	m     *Manager
	agent agent.Session
	ws    *workspace.Workspace
	// prep is the workspace's repository and its snapshot from before the
	// session, which its diff is taken against (nil for a session of an
	// earlier run).
	prep *preparation

	mu  sync.Mutex
	rec record
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

	// pacers hold the pump back (pace.go): paced wakes it when one moves
	// on; unpaced is closed once the session begins to close.
	pacers  map[*Pacer]bool
	paced   chan struct{}
	unpaced chan struct{}
	unpace  sync.Once

	// requests are the RequestIDs of the prompts whose turn has not
	// started (requests.go).
	requests promptRequests

	// ruled are the answers rules gave to approvals of the batch the pump
	// logs, handed to the agent once it is logged (rules.go). The pump's
	// own.
	ruled []agent.Resolution

	// holds keep the session alive for its attached hosts (hold.go);
	// inputSeq is the last numbered input line its agent was given.
	holds    holds
	inputSeq uint64
}

func newSession(m *Manager, rec record, a agent.Session, ws *workspace.Workspace, prep *preparation) *session {
	s := &session{m: m, agent: a, ws: ws, rec: rec, prep: prep, done: make(chan struct{}), idle: make(chan struct{}),
		subs: map[*subscriber]bool{}, paced: make(chan struct{}, 1), unpaced: make(chan struct{})}
	s.updateIdleLocked()
	return s
}

func (s *session) snapshot() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := s.rec.Info
	info.InputSeq = s.inputSeq
	return info
}

// pump logs every event of the agent, in order, before anyone can read
// it, and keeps the session's approvals and state in step. The session's
// end is logged last: after the workspace's "after" snapshot and the
// settling of what still waits for a decision, so a client that sees it
// sees a session whose work is kept.
func (s *session) pump() {
	defer s.m.wg.Done()
	defer close(s.done)
	ctx := context.Background()
	end := s.relay(ctx)
	s.release()
	// Whatever still waits for a decision can no longer be acted on.
	if _, err := s.m.cfg.Approvals.ResolveSession(s.rec.ID, agent.CauseTurnEnded, "the session ended"); err != nil {
		s.m.log.Warn("approvals of an ended session", "session", s.rec.ID, "agent", s.rec.Agent, "err", err)
	}
	s.track(ctx, &end)
	if err := s.append(ctx, &end); err != nil {
		s.m.log.Error("session end not logged", "session", s.rec.ID, "agent", s.rec.Agent, "err", err)
	}
	s.mu.Lock()
	s.rec.State, s.rec.TurnID = StateEnded, ""
	s.ended, s.awaited = true, 0
	s.updateIdleLocked()
	for sub := range s.subs { // everything was handed over: the end
		close(sub.ch)
		delete(s.subs, sub)
	}
	s.mu.Unlock()
	s.save()
	reason := end.Session.Reason
	if end.Error != nil {
		s.m.log.Error("session ended", "session", s.rec.ID, "agent", s.rec.Agent, "reason", reason,
			"code", end.Error.Code, "err", end.Error.Message)
		return
	}
	s.m.log.Info("session ended", "session", s.rec.ID, "agent", s.rec.Agent, "reason", reason)
}

// relay logs the agent's events up to its session.ended, which it
// returns unlogged; one whose events end without it gets one made up,
// the agent's failure in it. A panic while relaying ends this session as
// failed, its agent closed, instead of the runner.
func (s *session) relay(ctx context.Context) (end agent.Event) {
	ended := func(why *agent.Error) agent.Event {
		return agent.Event{Kind: agent.KindSessionEnded, SessionID: s.rec.ID, Time: s.m.cfg.Now(), Error: why,
			Session: &agent.SessionInfo{Agent: s.rec.Agent, NativeID: s.agent.NativeID(), Reason: "exited"}}
	}
	defer safe.Recover(s.m.log.With("session", s.rec.ID, "agent", s.rec.Agent), "session pump", func(p *safe.PanicError) {
		failure := &agent.Error{Code: agent.ErrorInternal, Message: p.Error()}
		s.stopPacing()
		_ = s.agent.Close()
		s.failTurn(ctx, failure)
		end = ended(failure)
		end.Session.Reason = "error"
	})
	for batch, err := range batches(ctx, s.agent) {
		if err != nil {
			s.m.log.Warn("session events failed", "session", s.rec.ID, "agent", s.rec.Agent, "err", err)
			failure := &agent.Error{Code: agent.ErrorAgentExit, Message: err.Error()}
			s.failTurn(ctx, failure)
			return ended(failure)
		}
		n := len(batch)
		for i := range batch {
			if batch[i].Kind == agent.KindSessionEnded {
				n = i
				break
			}
			s.track(ctx, &batch[i])
		}
		s.waitForPacers(ctx)
		if err := s.appendBatch(ctx, batch[:n]); err != nil {
			s.m.log.Error("session events not logged", "session", s.rec.ID, "agent", s.rec.Agent, "events", n, "err", err)
		}
		s.logged(batch[:n])
		s.handOverRuled()
		if n < len(batch) {
			e := batch[n]
			if e.Session == nil {
				e.Session = &agent.SessionInfo{Agent: s.rec.Agent, Reason: "exited"}
			}
			return e
		}
	}
	failure := &agent.Error{Code: agent.ErrorAgentExit, Message: "the agent's events ended without its session's end"}
	s.failTurn(ctx, failure)
	return ended(failure)
}

// failTurn logs the failure of a turn still open, for a session whose
// agent can no longer end it.
func (s *session) failTurn(ctx context.Context, failure *agent.Error) {
	info := s.snapshot()
	if info.State != StateRunning || info.TurnID == "" {
		return
	}
	e := agent.Event{Kind: agent.KindTurnCompleted, SessionID: s.rec.ID, TurnID: info.TurnID, Time: s.m.cfg.Now(),
		Turn: &agent.TurnInfo{Status: agent.TurnFailed}, Error: failure}
	s.track(ctx, &e)
	if err := s.append(ctx, &e); err != nil {
		s.m.log.Error("turn failure not logged", "session", s.rec.ID, "agent", s.rec.Agent, "err", err)
	}
	s.logged([]agent.Event{e})
}

// release snapshots the workspace as the session left it and lets it go,
// and the session's slot under MaxSessions. A session whose workspace was
// never prepared gets no snapshot.
func (s *session) release() {
	defer s.m.unreserve()
	<-s.prep.done // bounded by the git timeout; the session owns it
	if s.prep.before != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := s.ws.Snapshot(ctx, "tether: after session "+s.rec.ID); err != nil {
			s.m.log.Warn("workspace snapshot failed", "session", s.rec.ID, "agent", s.rec.Agent, "err", err)
		}
		cancel()
	}
	s.ws.Release()
}

// diff is what changed in the workspace since the session began, while
// the session holds it; ok is false without a snapshot to compare with.
func (s *session) diff(ctx context.Context) (changes []agent.FileChange, ok bool, err error) {
	if s.prep == nil {
		return nil, false, nil
	}
	if err := s.prepared(ctx); err != nil || s.prep.before == "" {
		return nil, false, nil
	}
	files, err := s.ws.Diff(ctx, s.prep.before)
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
	e.SessionID = s.rec.ID
	switch e.Kind {
	case agent.KindSessionStarted:
		if e.Session != nil && e.Session.NativeID != "" {
			s.mu.Lock()
			changed := s.rec.NativeID != e.Session.NativeID
			s.rec.NativeID = e.Session.NativeID
			s.mu.Unlock()
			if changed {
				s.save()
			}
		}
	case agent.KindTurnStarted:
		s.requests.stamp(e)
	case agent.KindApprovalRequested:
		a := *e.Approval
		a.SessionID, a.Agent = s.rec.ID, s.rec.Agent
		if s.m.cfg.ApprovalTimeout > 0 && a.Expires.IsZero() {
			a.Expires, a.Default = a.Created.Add(s.m.cfg.ApprovalTimeout), agent.Deny
		}
		e.Approval = &a
		if err := s.m.cfg.Approvals.Add(a); err != nil {
			s.m.log.Error("approval not recorded", "session", s.rec.ID, "agent", s.rec.Agent, "approval", a.ID, "err", err)
			break
		}
		if r, ok := s.ruleDenies(a); ok {
			if won, err := s.m.cfg.Approvals.Resolve(s.rec.ID, r); err == nil {
				s.ruled = append(s.ruled, won)
			}
		}
	case agent.KindApprovalResolved:
		// The agent settled it (an interrupt, say): the store learns it,
		// unless a client's answer came first, which stands.
		if _, err := s.m.cfg.Approvals.Resolve(s.rec.ID, *e.Resolution); err != nil && !errors.Is(err, agent.ErrAlreadyResolved) {
			s.m.log.Warn("approval resolution not recorded", "session", s.rec.ID, "agent", s.rec.Agent, "err", err)
		}
	}
}

// logged moves the session's state with the turns whose start or end the
// log now holds: after the append, so that no one sees a turn ended (or
// started) whose event is not in the log yet, and the state and LastSeq
// agree.
func (s *session) logged(events []agent.Event) {
	for i := range events {
		switch events[i].Kind {
		case agent.KindTurnStarted:
			s.setState(StateRunning, events[i].TurnID)
		case agent.KindTurnCompleted:
			s.setState(StateIdle, "")
		}
	}
}

func (s *session) setState(st State, turn string) {
	s.mu.Lock()
	if s.rec.State != StateEnded {
		s.rec.State, s.rec.TurnID = st, turn
	}
	if st == StateRunning {
		s.awaited = 0 // the turn a prompt was accepted for has started
	}
	s.updateIdleLocked()
	s.mu.Unlock()
	// Not saved: a turn's start and end are in the log, which a restart
	// reads (see openWork), and a save's fsync here would hold up every
	// reader of the turn's first and last events.
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
	busy := !s.ended && (s.rec.State == StateRunning || s.awaited > 0)
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
		s.m.log.Warn("turn not interrupted at shutdown", "session", s.rec.ID, "agent", s.rec.Agent, "err", err)
		return // its close ends it
	}
	select {
	case <-s.idleNow():
	case <-ictx.Done():
	}
}

// prepared waits until the workspace is ready for the agent to change it:
// its repository made and the "before" snapshot taken. Everything from a
// client that reaches the agent waits for it. A repository that could not
// be made ends the session: it could not keep its history (ErrWorkspace).
func (s *session) prepared(ctx context.Context) error {
	if s.prep == nil {
		return nil
	}
	select {
	case <-s.prep.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.prep.err != nil {
		go s.close(context.Background())
		return fmt.Errorf("%w: %w", ErrWorkspace, s.prep.err)
	}
	return nil
}

// save records the session in the index.
func (s *session) save() {
	s.mu.Lock()
	rec := s.rec
	s.mu.Unlock()
	if err := s.m.index.save(rec); err != nil {
		s.m.log.Warn("session not recorded in the index", "session", s.rec.ID, "agent", s.rec.Agent, "err", err)
	}
}

// batches yields a's events in the batches it hands them over in, or one
// by one when it does not batch them.
func batches(ctx context.Context, a agent.Session) iter.Seq2[[]agent.Event, error] {
	if b, ok := a.(agent.Batcher); ok {
		return b.EventBatches(ctx)
	}
	return func(yield func([]agent.Event, error) bool) {
		var one [1]agent.Event
		for e, err := range a.Events(ctx) {
			one[0] = e
			if !yield(one[:], err) {
				return
			}
		}
	}
}

// append logs one event with its seq and wakes live readers.
func (s *session) append(ctx context.Context, e *agent.Event) error {
	one := []agent.Event{*e}
	err := s.appendBatch(ctx, one)
	*e = one[0]
	return err
}

// appendBatch logs events with consecutive seqs, all or none, and hands
// them to live readers.
func (s *session) appendBatch(ctx context.Context, events []agent.Event) error {
	if len(events) == 0 {
		return nil
	}
	last, err := s.m.logEvents(ctx, s.rec.Agent, s.rec.ID, events)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.rec.LastSeq = last
	if len(s.subs) > 0 {
		// One copy the readers share (the batch goes back to its driver).
		shared := slices.Clone(events)
		events = shared
	}
	for sub := range s.subs {
		for i := range events {
			select {
			case sub.ch <- &events[i]:
				continue
			default: // too far behind: it goes back to the log
				sub.lagged = true
				close(sub.ch)
				delete(s.subs, sub)
			}
			break
		}
	}
	s.mu.Unlock()
	return nil
}

// logEvent writes e to session id's log; see logEvents.
func (m *Manager) logEvent(ctx context.Context, agentKind, id string, e *agent.Event) (uint64, error) {
	one := []agent.Event{*e}
	seq, err := m.logEvents(ctx, agentKind, id, one)
	*e = one[0]
	return seq, err
}

// logEvents writes events to session id's log in one append, numbers
// each with its seq, hands them to the runner-wide feed's readers at the
// positions the log gave them, and tells the observer: every event a
// session's log gets goes through here, a live session's and one a
// restart ends alike. It returns the last seq.
func (m *Manager) logEvents(ctx context.Context, agentKind, id string, events []agent.Event) (uint64, error) {
	payloads, release, err := m.encode(events)
	if err != nil {
		return 0, err
	}
	defer release()
	m.feed.appending.Lock()
	first, pos, err := m.cfg.Log.AppendAt(ctx, id, payloads)
	if err == nil {
		for i := range events {
			// payloads are now the log's own copies.
			events[i].Seq, events[i].Logged = int64(first)+int64(i), payloads[i]
			events[i].RawChecked = len(events[i].Raw) > 0
		}
		m.feed.logged(pos, events)
	}
	m.feed.appending.Unlock()
	if err != nil {
		return 0, err
	}
	for i := range events {
		m.cfg.Observer.EventLogged(agentKind, &events[i])
	}
	return first + uint64(len(events)) - 1, nil
}

// checkRaw holds e's raw payload to what every logged event's is (see
// agent.Event.Raw), unless its driver vouched for it: one that is not
// JSON, or nests too deep for a client's decoder, is not kept, and a
// native event, which is nothing but its payload, says so instead.
func (m *Manager) checkRaw(e *agent.Event) {
	if len(e.Raw) == 0 || e.RawChecked || jsonscan.Valid(e.Raw, agent.MaxRawDepth) {
		return
	}
	n := len(e.Raw)
	m.log.Warn("an agent's payload is not JSON, or nests deeper than a client can read: not logged",
		"session", e.SessionID, "kind", e.Kind, "bytes", n)
	e.Raw = nil
	if e.Kind == agent.KindNative {
		e.Kind = agent.KindError
		e.Error = &agent.Error{Code: agent.ErrorProtocol,
			Message: fmt.Sprintf("the agent wrote %d bytes that are not JSON or nest deeper than %d levels; not kept", n, agent.MaxRawDepth)}
	}
}

// maxEncoderKept is the largest encoding buffer kept for the next append:
// a burst of huge events does not stay in memory.
const maxEncoderKept = 256 << 10

// encode writes events' JSON back to back into one of the manager's
// buffers; release gives it back once the log has copied them.
func (m *Manager) encode(events []agent.Event) (payloads [][]byte, release func(), err error) {
	buf, _ := m.encoders.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	need := 0
	for i := range events {
		need += encodedSize(&events[i])
	}
	b := slices.Grow((*buf)[:0], need)
	payloads = make([][]byte, len(events))
	for i := range events {
		m.checkRaw(&events[i])
		start := len(b)
		if b, err = events[i].AppendJSON(b); err != nil {
			return nil, nil, err
		}
		payloads[i] = b[start:len(b):len(b)]
	}
	return payloads, func() {
		if cap(b) <= maxEncoderKept {
			*buf = b
			m.encoders.Put(buf)
		}
	}, nil
}

// encodedSize is about how long e's JSON is, to encode it without
// growing the buffer.
func encodedSize(e *agent.Event) int {
	n := 256 + len(e.Raw) + len(e.SessionID) + len(e.TurnID)
	if e.Item != nil {
		n += len(e.Item.Text) + len(e.Item.ID) + len(e.Item.MessageID) + len(e.Item.ParentID)
		if c := e.Item.Command; c != nil {
			n += len(c.Output) + len(c.Command)
		}
	}
	if e.Delta != nil {
		n += len(e.Delta.Text) + len(e.Delta.ItemID)
	}
	return n + n/8 // room for escapes
}

// subscriberRoom is how many events a live reader may be behind before
// it goes back to the log (which serves a reader that far behind as well).
const subscriberRoom = 256

// subscriber is a live reader of a session.
type subscriber struct {
	ch     chan *agent.Event // shared with the other readers: not to be changed
	lagged bool              // set (under the session's mu) when it was dropped for falling behind
}

// subscribe registers a live reader; its channel closes when the session
// ends (lagged false) or the reader fell behind (lagged true).
func (s *session) subscribe() *subscriber {
	sub := &subscriber{ch: make(chan *agent.Event, subscriberRoom)}
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
	s.stopPacing()
	s.closing.Do(func() { err = s.agent.Close() })
	select {
	case <-s.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return err
}
