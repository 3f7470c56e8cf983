package claudecli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/driver/internal/outbox"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// Canonical is Claude Code as an agent.Driver: sessions over the SDK,
// locally or through a runner (Base.Runner), reported as canonical events
// with every stream-json line beside its event.
type Canonical struct {
	// Base is the SDK options every session starts from (CLI path,
	// environment, runner, permission mode, …); Start sets the working
	// directory, resume, fork, model and the approval callback.
	Base claude.Options
	// Now is the clock of the events; nil means time.Now.
	Now func() time.Time
}

var _ agent.Driver = (*Canonical)(nil)

func (d *Canonical) Name() string { return "claude" }

func (d *Canonical) Capabilities() agent.Capabilities {
	return agent.Capabilities{Resume: true, Fork: true, Questions: true, EditInput: true, Images: true, Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeSession},
		Modes: modes(), SetModel: true, Models: models()}
}

// Start connects to the CLI; the session's events begin with
// session.started once the CLI has said who it is.
func (d *Canonical) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	// A client's MCP servers are the runner's driver's (Driver): here the
	// host's own SDK options say which servers the CLI gets.
	if err := agent.CheckMCPServers(d.Name(), nil, req.MCPServers); err != nil {
		return nil, err
	}
	s := newCanonicalSession(d.Now, nil)
	s.hostKeepsHistory = req.HostKeepsHistory
	opts := d.Base
	if opts.Runner == nil && req.Workspace != "" {
		opts.Cwd = req.Workspace
	}
	if req.Model != "" {
		opts.Model = req.Model
	}
	if req.Mode != "" {
		opts.PermissionMode = claude.PermissionMode(req.Mode)
	}
	opts.Resume, opts.ForkSession = req.Resume, req.Fork
	s.prepare(&opts)
	if req.Resume != "" && opts.Runner == nil {
		s.past = d.past(opts, req.Resume)
	}
	if err := s.connect(ctx, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// past is the conversation a resume continues, as the CLI keeps it in the
// home it runs with; nothing when that cannot be read (the session goes
// on, its Messages then start with the resume).
func (d *Canonical) past(opts claude.Options, id string) []agent.Item {
	home := opts.Env["HOME"]
	if home == "" && !opts.ReplaceEnv {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return nil
	}
	items, err := transcriptItems(home, id)
	if err != nil && opts.Logger != nil {
		opts.Logger.Warn("the resumed conversation's past could not be read", "session", id, "err", err)
	}
	return items
}

func newCanonicalSession(now func() time.Time, rewrite *bashRewriter) *canonicalSession {
	if now == nil {
		now = time.Now
	}
	return &canonicalSession{out: outbox.New(64), pending: map[string]*pendingApproval{}, now: now, rewrite: rewrite,
		controlStarted: make(chan struct{}, 1)}
}

// prepare sets what the session needs of the SDK: partial messages for
// deltas, and its approval callback.
func (s *canonicalSession) prepare(opts *claude.Options) {
	opts.IncludePartialMessages = true
	opts.CanUseTool = s.decide
	host := opts.OnLineError
	opts.OnLineError = func(err error) {
		s.lineError(err)
		if host != nil {
			host(err)
		}
	}
}

// lineError reports a line of the CLI's output that could not be read
// (not JSON, too long, cut off): an error event with the line as its raw
// payload (a JSON string when it is not JSON); the session goes on.
func (s *canonicalSession) lineError(err error) {
	var raw json.RawMessage
	var pe *cc.ParseError
	if errors.As(err, &pe) {
		if json.Valid(pe.Line) {
			raw = append(raw, pe.Line...)
		} else {
			raw, _ = json.Marshal(string(pe.Line))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mapper == nil || s.ended {
		return
	}
	e := s.mapper.event(agent.KindError, raw)
	e.Error = &agent.Error{Code: agent.ErrorProtocol, Message: err.Error()}
	s.out.Add(e)
}

// connect starts the CLI through the SDK, whose reader maps its messages.
func (s *canonicalSession) connect(ctx context.Context, opts claude.Options) error {
	opts.OnMessage = s.pushed
	opts.DiscardServerInfo = true // nothing of the session's asks for it
	client, err := claude.Connect(ctx, opts)
	if err != nil {
		return err
	}
	cwd := opts.Cwd
	if opts.Runner != nil {
		cwd = "" // a directory on the runner, which the runner's own events name
	}
	s.beginPushed(sdkLink{client}, opts.Model, cwd)
	return nil
}

// begin starts the session's events and its reader over link.
func (s *canonicalSession) begin(link cliLink, model, cwd string) {
	s.start(link, model, cwd)
	s.wg.Add(1)
	go s.read()
}

// beginPushed starts the session's events over the SDK's client, whose
// reader hands each message to pushed: the session needs no reader of its
// own. What came before the session began is mapped first, in order.
func (s *canonicalSession) beginPushed(link cliLink, model, cwd string) {
	// Held while what came early is mapped: a message the SDK's reader
	// pushes meanwhile waits, and comes after them.
	s.delivery.Lock()
	defer s.delivery.Unlock()
	for _, msg := range s.start(link, model, cwd) {
		// Mapped without waiting for room: nobody takes the session's
		// events before Start returns.
		s.deliver(msg, false)
	}
}

// start sets the session up over link and returns the messages pushed
// before it was.
func (s *canonicalSession) start(link cliLink, model, cwd string) []claude.Message {
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.link = link
	s.mapper = newCanonicalMapper(link.sessionID(), s.now)
	s.out.Add(s.mapper.startSession(link.sessionID(), model, cwd))
	early := s.early
	s.early, s.begun = nil, true
	return early
}

// pushed is the SDK's Options.OnMessage: it maps msg on the SDK's reader
// goroutine, and ends the session's events at nil (the end of the
// output) or once the session stops reading. A message that comes before
// the session has begun waits for it.
func (s *canonicalSession) pushed(msg claude.Message) {
	s.delivery.Lock()
	defer s.delivery.Unlock()
	s.mu.Lock()
	if !s.begun {
		s.early = append(s.early, msg)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.deliver(msg, true)
}

// deliver maps one pushed message (nil: the output ended), waiting for
// room after it when wait is set; call with delivery held.
func (s *canonicalSession) deliver(msg claude.Message, wait bool) {
	if s.stopped {
		return
	}
	if msg != nil {
		s.mapOne(msg)
		if !wait || s.waitRoom() {
			return
		}
	}
	s.stopped = true
	s.finish(nil)
}

// canonicalSession is one Claude Code conversation. One goroutine reads
// the CLI's messages (the SDK's reader, which pushes them, or the
// session's own over a relay); approval callbacks run on the SDK's goroutines; the
// mapper is shared under mu and events leave in the order they were made.
type canonicalSession struct {
	link cliLink
	// relay is link for a native client that speaks the control protocol
	// itself (nil otherwise); claim arbitrates the approvals it answers.
	relay *relayLink
	claim func(agent.Resolution) (agent.Resolution, error)
	// rewrite is the sandbox's Bash rewrite, whose wrapping every event
	// and approval is cleared of; nil without a sandbox.
	rewrite *bashRewriter
	now     func() time.Time
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	mapper  *canonicalMapper
	pending map[string]*pendingApproval
	turn    bool
	kept    history      // the completed items, unless hostKeepsHistory
	past    []agent.Item // a resumed conversation's, from the CLI's store
	// hostKeepsHistory: the host's log answers Messages
	// (StartRequest.HostKeepsHistory), so kept stays empty.
	hostKeepsHistory bool
	ended            bool
	// begun is set once the session is set up; early holds what the
	// SDK's reader pushed before (nil for the output's end).
	begun bool
	early []claude.Message
	// delivery orders pushed messages: the SDK's reader and, once, the
	// start, which maps what came early. stopped (under delivery): the
	// session's events have ended.
	delivery sync.Mutex
	stopped  bool
	// closing: the host closes the session (a turn it ends is
	// interrupted, not failed); turnOver, when set, is closed at the
	// running turn's end.
	closing  bool
	turnOver chan struct{}

	out       *outbox.Outbox
	closeOnce sync.Once

	// controls counts the session's control calls under way;
	// controlStarted is signalled when one starts (see waitRoom).
	controls       atomic.Int32
	controlStarted chan struct{}
}

type pendingApproval struct {
	toolUseID string
	// relayed: the CLI asked through a relay, so an answer is written to
	// it here (no SDK callback waits); input is what it asked about.
	relayed bool
	input   json.RawMessage
	tool    string
	// question is set for an AskUserQuestion call: a question approval.
	question *agent.Question
	answer   chan agent.Resolution // buffered 1
	first    *agent.Resolution
}

func (s *canonicalSession) NativeID() string { return s.link.sessionID() }

// read maps every message until the CLI's output ends.
func (s *canonicalSession) read() {
	defer s.wg.Done()
	var failure error
	for msg, err := range s.link.messages(s.ctx) {
		if err != nil {
			failure = err
			break
		}
		if !s.take(msg) {
			break
		}
	}
	s.finish(failure)
}

// take maps one message of the CLI's, and waits for room for more; false
// once the session stops reading (it is closing).
func (s *canonicalSession) take(msg claude.Message) bool {
	s.mapOne(msg)
	return s.waitRoom()
}

// mapOne maps one message of the CLI's into the outbox.
func (s *canonicalSession) mapOne(msg claude.Message) {
	msg = s.unwrapped(msg)
	s.mu.Lock()
	var events []agent.Event
	switch m := msg.(type) {
	case *cc.ControlRequest: // a relay's: the SDK answers its own
		events = s.relayedRequest(m)
	case *cc.ControlCancelRequest:
		events = s.relayedCancel(m)
	case *claude.ResultMessage:
		s.turn = false
		s.turnOverLocked()
		events = s.mapper.line(msg)
	default:
		events = s.mapper.line(msg)
	}
	s.record(events)
	s.out.Add(events...)
	s.mu.Unlock()
}

// waitRoom waits for room in the outbox before more is read; false once
// the session stops reading. While a control call of the session's waits
// for its answer, which the CLI writes behind what it wrote before, it
// reads on past high water (bounded by the call's timeout).
func (s *canonicalSession) waitRoom() bool {
	for s.controls.Load() == 0 {
		woken, err := s.out.WaitRoomOr(s.ctx, s.controlStarted)
		if err != nil {
			return false
		}
		if !woken {
			return true
		}
	}
	return s.ctx.Err() == nil
}

// controlling marks a control call of the session's under way until done
// is called (see waitRoom).
func (s *canonicalSession) controlling() (done func()) {
	s.controls.Add(1)
	select {
	case s.controlStarted <- struct{}{}:
	default:
	}
	return func() { s.controls.Add(-1) }
}

// finish ends the session's events: its output ended (failure, or the
// link's error, says why) or the session stopped reading.
func (s *canonicalSession) finish(failure error) {
	if failure == nil {
		failure = s.link.err()
	}
	s.end(failure)
	s.out.Close()
}

// record keeps completed items for Messages, unless the host keeps the
// history; call with mu held.
func (s *canonicalSession) record(events []agent.Event) {
	if s.hostKeepsHistory {
		return
	}
	for _, e := range events {
		if e.Kind == agent.KindItemCompleted {
			s.kept.add(e.Item)
		}
	}
}

// end reports the session's end: closed by the host, or the CLI exited.
func (s *canonicalSession) end(failure error) {
	s.mu.Lock()
	s.ended = true
	s.turnOverLocked()
	info := &agent.SessionInfo{Agent: "claude", NativeID: s.link.sessionID(), Reason: "closed"}
	var why *agent.Error
	if failure != nil && !errors.Is(failure, context.Canceled) {
		info.Reason = "exited"
		why = &agent.Error{Code: agent.ErrorAgentExit, Message: failure.Error()}
	}
	turnWhy := why // nil: the host closed the session, and so interrupted its turn
	if why == nil && !s.closing {
		turnWhy = &agent.Error{Code: agent.ErrorAgentExit, Message: "the session ended during the turn"}
	}
	events := s.mapper.abort(turnWhy)
	e := s.mapper.event(agent.KindSessionEnded, nil)
	e.TurnID = ""
	e.Session = info
	if info.Reason == "exited" {
		e.Error = why
	}
	s.out.Add(append(events, e)...)
	s.mu.Unlock()
}

// Events yields the session's events in order, and stops after
// session.ended.
func (s *canonicalSession) Events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return s.out.Events(ctx)
}

// EventBatches is Events in the batches the events became ready in
// (agent.Batcher).
func (s *canonicalSession) EventBatches(ctx context.Context) iter.Seq2[[]agent.Event, error] {
	return s.out.Batches(ctx)
}

func (s *canonicalSession) Prompt(ctx context.Context, p agent.Prompt) error {
	s.mu.Lock()
	switch {
	case s.ended:
		s.mu.Unlock()
		return agent.ErrSessionEnded
	case s.turn:
		s.mu.Unlock()
		return agent.ErrTurnInProgress
	}
	if err := p.ValidateImages(); err != nil {
		s.mu.Unlock()
		return err
	}
	in, text, err := promptInput(p)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.turn = true
	events := s.mapper.startTurn(text, p.RequestID)
	s.record(events)
	s.out.Add(events...) // before the CLI can answer the prompt
	s.mu.Unlock()
	if err := s.link.send(ctx, in); err != nil {
		return fmt.Errorf("claudecli: prompt: %w", err)
	}
	return nil
}

func (s *canonicalSession) Steer(context.Context, agent.Prompt) error {
	return &agent.UnsupportedError{Agent: "claude", Capability: "steer"}
}

func (s *canonicalSession) Interrupt(ctx context.Context) error {
	s.mu.Lock()
	running := s.turn
	s.mu.Unlock()
	if !running {
		return agent.ErrNoTurn
	}
	defer s.controlling()()
	return s.link.interrupt(ctx)
}

func (s *canonicalSession) Messages(context.Context) ([]agent.Item, error) {
	s.mu.Lock()
	past, kept := s.past, s.kept.snapshot()
	s.mu.Unlock()
	if s.hostKeepsHistory {
		return nil, &agent.HistoryElsewhereError{Past: past}
	}
	items, err := kept.items() // decoded without holding up the reader
	if err != nil {
		return nil, err
	}
	return append(append(make([]agent.Item, 0, len(past)+len(items)), past...), items...), nil
}

func (s *canonicalSession) Diff(context.Context) ([]agent.FileChange, error) {
	return nil, &agent.UnsupportedError{Agent: "claude", Capability: "diff"}
}

// closeInterruptWait bounds how long Close waits for an interrupted
// turn's end before it closes the CLI anyway.
const closeInterruptWait = 2 * time.Second

// Close ends the CLI and the reader, and waits for both. A running turn is
// interrupted first: a CLI whose input just closes answers its pending
// permission request itself, and goes on with the turn (it calls the model
// again) before it exits.
func (s *canonicalSession) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		s.interruptTurn()
		s.mu.Lock()
		for id := range s.pending { // a waiting callback gives up: the CLI is going
			_ = s.settleLocked(id, agent.Resolution{Decision: agent.Deny, Reason: "the session closed", Cause: agent.CauseTurnEnded})
		}
		s.mu.Unlock()
		// Reading stops first: a reader waiting for room in the outbox
		// (the SDK's own, for pushed messages) would keep the link from
		// closing.
		s.cancel()
		err = s.link.close()
		s.wg.Wait()
	})
	return err
}

// interruptTurn interrupts the running turn, if any, and waits (up to
// closeInterruptWait) for its end.
func (s *canonicalSession) interruptTurn() {
	s.mu.Lock()
	if !s.turn || s.ended {
		s.mu.Unlock()
		return
	}
	over := make(chan struct{})
	s.turnOver = over
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), closeInterruptWait)
	defer cancel()
	done := s.controlling()
	err := s.link.interrupt(ctx)
	done()
	if err != nil {
		return // the CLI is gone or does not answer: closing it ends the turn
	}
	select {
	case <-over:
	case <-ctx.Done():
	}
}

// turnOverLocked tells a waiting Close that the turn ended; call with mu
// held.
func (s *canonicalSession) turnOverLocked() {
	if s.turnOver != nil {
		close(s.turnOver)
		s.turnOver = nil
	}
}

// unwrapped is msg with the sandbox's wrapping of Bash commands replaced
// by the model's own command, so every event shows what the model asked.
func (s *canonicalSession) unwrapped(msg claude.Message) claude.Message {
	if s.rewrite == nil {
		return msg
	}
	line := s.rewrite.unwrap(msg.Raw())
	if bytes.Equal(line, msg.Raw()) {
		return msg
	}
	clean, err := cc.Parse(line)
	if err != nil {
		return msg
	}
	return clean
}
