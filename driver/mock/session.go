package mock

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strconv"
	"sync"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/internal/outbox"
)

// Why a turn's context ended.
var (
	errInterrupted = errors.New("mock: the turn was interrupted")
	errClosed      = errors.New("mock: the session closed")
)

// session is one open conversation. A turn runs on its own goroutine;
// every event is made under mu and leaves through the outbox in order.
type session struct {
	d         *Driver
	conv      *conversation
	workspace string
	out       *outbox.Outbox
	ctx       context.Context // ends at Close, and with it any turn
	cancel    context.CancelCauseFunc
	wg        sync.WaitGroup // the running turn

	mu             sync.Mutex
	turn           *turnRun // nil between turns
	pending        map[string]*pendingApproval
	sessionAllowed map[string]bool // tools allowed with scope session
	ended          bool
	mode           string // empty is ModeDefault
	modelSet       bool   // the model was changed by Configure: replies name it

	closeOnce sync.Once
}

func newSession(d *Driver, conv *conversation, workspace string) *session {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &session{d: d, conv: conv, workspace: workspace, out: outbox.New(d.cfg.Outbox), ctx: ctx, cancel: cancel,
		pending: map[string]*pendingApproval{}, sessionAllowed: map[string]bool{}}
}

func (s *session) NativeID() string { return s.conv.nativeID }

// event is an event of kind, stamped now, with set filling its payload.
func (s *session) event(k agent.Kind, set func(*agent.Event)) agent.Event {
	e := agent.Event{Kind: k, SessionID: s.conv.nativeID, Time: s.d.cfg.Now()}
	if set != nil {
		set(&e)
	}
	return e
}

// rawLine is the mock's own record of an event, kept in Event.Raw as a
// real agent's payload would be.
type rawLine struct {
	Type string `json:"type"`
	Turn string `json:"turn,omitempty"`
	Item string `json:"item,omitempty"`
	Text string `json:"text,omitempty"`
}

func raw(e agent.Event) json.RawMessage {
	l := rawLine{Type: "mock." + string(e.Kind), Turn: e.TurnID}
	switch {
	case e.Item != nil:
		l.Item = e.Item.ID
	case e.Delta != nil:
		l.Item, l.Text = e.Delta.ItemID, e.Delta.Text
	case e.Approval != nil:
		l.Item = e.Approval.ID
	case e.Resolution != nil:
		l.Item = e.Resolution.ApprovalID
	}
	b, _ := json.Marshal(l) // strings only: it cannot fail
	return b
}

// emitLocked records and queues events; call with mu held.
func (s *session) emitLocked(events ...agent.Event) {
	for i := range events {
		events[i].Raw = raw(events[i])
		if events[i].Kind == agent.KindItemCompleted {
			s.conv.items = append(s.conv.items, *events[i].Item)
		}
	}
	s.out.Add(events...)
}

func (s *session) emitNow(events ...agent.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emitLocked(events...)
}

func (s *session) Events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return s.out.Events(ctx)
}

// EventBatches is Events in the batches the events became ready in
// (agent.Batcher).
func (s *session) EventBatches(ctx context.Context) iter.Seq2[[]agent.Event, error] {
	return s.out.Batches(ctx)
}

// Prompt starts a turn: turn.started and the user_message are queued
// before it returns, the rest comes from the turn's goroutine.
func (s *session) Prompt(_ context.Context, p agent.Prompt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended:
		return agent.ErrSessionEnded
	case s.turn != nil:
		return agent.ErrTurnInProgress
	}
	if err := agent.CheckImages(s.d.Name(), s.d.Capabilities(), p); err != nil {
		return err
	}
	s.conv.turns++
	t := newTurn(s, s.conv.turns, p.Text)
	t.images = p.Images
	s.turn = t
	s.emitLocked(t.event(agent.KindTurnStarted, func(e *agent.Event) { e.Turn = &agent.TurnInfo{} }),
		t.itemEvent(agent.KindItemCompleted, agent.Item{ID: t.id + "/user", Type: agent.ItemUserMessage, Status: agent.ItemDone, Text: p.Text}))
	s.wg.Add(1)
	go t.run()
	return nil
}

// Configure switches the mode or the model for the turns that follow.
func (s *session) Configure(_ context.Context, set agent.Settings) error {
	if err := s.d.Capabilities().CheckSettings("mock", set); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return agent.ErrSessionEnded
	}
	if set.Mode != "" {
		s.mode = set.Mode
	}
	if set.Model != "" {
		s.conv.model, s.modelSet = set.Model, true
	}
	return nil
}

// Steer adds a prompt to the running turn: its user_message now, and a
// mention in the reply.
func (s *session) Steer(_ context.Context, p agent.Prompt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.turn
	switch {
	case s.ended:
		return agent.ErrSessionEnded
	case t == nil:
		return agent.ErrNoTurn
	}
	if err := agent.CheckImages(s.d.Name(), s.d.Capabilities(), p); err != nil {
		return err
	}
	t.steers = append(t.steers, p.Text)
	s.emitLocked(t.itemEvent(agent.KindItemCompleted, agent.Item{ID: t.id + "/steer-" + strconv.Itoa(len(t.steers)),
		Type: agent.ItemUserMessage, Status: agent.ItemDone, Text: p.Text}))
	return nil
}

// Interrupt ends the running turn: it completes interrupted.
func (s *session) Interrupt(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn == nil {
		return agent.ErrNoTurn
	}
	s.turn.cancel(errInterrupted)
	return nil
}

func (s *session) Messages(context.Context) ([]agent.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.Item(nil), s.conv.items...), nil
}

// Diff is what the conversation wrote in its workspace: mock-notes.md,
// from before its first change to now.
func (s *session) Diff(context.Context) ([]agent.FileChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conv.notes == nil {
		return []agent.FileChange{}, nil
	}
	return []agent.FileChange{s.conv.notes.change()}, nil
}

// Close ends a running turn (interrupted; a pending approval is resolved
// with CauseTurnEnded), reports session.ended and frees the conversation
// for a resume.
func (s *session) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.ended = true // no turn starts from here on
		s.mu.Unlock()
		s.cancel(errClosed)
		s.wg.Wait()
		s.mu.Lock()
		s.emitLocked(s.event(agent.KindSessionEnded, func(e *agent.Event) {
			e.Session = &agent.SessionInfo{Agent: "mock", NativeID: s.conv.nativeID, Reason: "closed"}
		}))
		s.mu.Unlock()
		s.out.Close()
		s.d.release(s.conv)
	})
	return nil
}
