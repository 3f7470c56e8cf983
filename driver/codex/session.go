package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/internal/outbox"
	"github.com/tetherhq/tether/protocol/codexapp"
	"github.com/tetherhq/tether/protocol/ndjson"
	"github.com/tetherhq/tether/transport"
)

// clientVersion is the version the driver tells the app-server it is.
const clientVersion = "0.1.0"

// answerTimeout bounds writing an answer or an interrupt to the app-server.
const answerTimeout = 10 * time.Second

// outboxHighWater is how many events may wait for the reader of Events
// before the app-server's output is no longer read.
const outboxHighWater = 64

// session is one Codex thread on its own app-server process. One goroutine
// reads the app-server; the mapper and the approvals are shared under mu,
// and events leave through the outbox in the order they were made.
type session struct {
	d      *Driver
	conn   transport.Conn
	rpc    *rpc
	log    *slog.Logger
	now    func() time.Time
	ctx    context.Context // the reader's life
	cancel context.CancelFunc
	wg     sync.WaitGroup
	out    *outbox.Outbox

	mu        sync.Mutex
	m         *mapper
	thread    string
	turnOn    bool   // a turn was asked for and has not completed
	turnID    string // its id, once known
	lastTurn  string // the last turn that completed
	timer     *time.Timer
	approvals approvals
	// changes are this session's completed file change items, for Diff.
	changes []agent.Item
	ended   bool
	closing bool
	// model, once a client set one (Configure), goes with every turn.
	model string

	closeOnce sync.Once
	closeErr  error
}

// start runs the app-server and opens the thread.
func start(ctx context.Context, d *Driver, cmd *transport.Command, req agent.StartRequest) (*session, error) {
	conn, err := cmd.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("codex: start app-server: %w", err)
	}
	s := &session{d: d, conn: conn, rpc: newRPC(conn), log: d.cfg.Logger, now: d.cfg.Now,
		out: outbox.New(outboxHighWater), m: newMapper(d.cfg.Now),
		approvals: newApprovals()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.read()
	if err := s.open(ctx, req); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// open initializes the connection and starts, resumes or forks the thread.
func (s *session) open(ctx context.Context, req agent.StartRequest) error {
	init := &codexapp.InitializeParams{ClientInfo: codexapp.ClientInfo{Name: "tether", Version: clientVersion},
		Capabilities: &codexapp.InitializeCapabilities{OptOutNotificationMethods: []string{"account/rateLimits/updated"}}}
	if err := s.rpc.call(ctx, init, nil); err != nil {
		return err
	}
	if err := s.rpc.notify(ctx, codexapp.MethodInitialized, nil); err != nil {
		return fmt.Errorf("codex: initialized: %w", err)
	}
	config := threadConfig()
	maps.Copy(config, mcpConfig(req.MCPServers))
	var p codexapp.Params
	switch {
	case req.Resume != "" && req.Fork:
		p = &codexapp.ThreadForkParams{ThreadID: req.Resume, Cwd: req.Workspace, Model: req.Model,
			ApprovalPolicy: approvalPolicy, Sandbox: sandboxMode, Config: config}
	case req.Resume != "":
		p = &codexapp.ThreadResumeParams{ThreadID: req.Resume, Cwd: req.Workspace, Model: req.Model,
			ApprovalPolicy: approvalPolicy, Sandbox: sandboxMode, Config: config, ExcludeTurns: true}
	default:
		p = &codexapp.ThreadStartParams{Cwd: req.Workspace, Model: req.Model,
			ApprovalPolicy: approvalPolicy, Sandbox: sandboxMode, Config: config}
	}
	var res codexapp.ThreadResponse
	if err := s.rpc.call(ctx, p, &res); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.thread = res.Thread.ID
	cwd := res.Thread.Cwd
	if cwd == "" {
		cwd = req.Workspace
	}
	s.out.Add(s.m.startSession(res.Thread.ID, res.Model, cwd, nil))
	return nil
}

// The thread's policy: Codex asks before it runs a command (but those it
// knows to be read-only) or changes a file, and its commands run in its own
// sandbox, which may write in the workspace only.
const (
	approvalPolicy = codexapp.ApprovalUntrusted
	sandboxMode    = codexapp.SandboxWorkspaceWrite
)

func (s *session) NativeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.thread
}

// read handles every line of the app-server until its output ends.
func (s *session) read() {
	defer s.wg.Done()
	defer s.out.Close()
	var failure error
	for {
		line, err := s.conn.Read(s.ctx)
		if errors.Is(err, ndjson.ErrSkipped) {
			s.protocolError(nil, fmt.Errorf("an unreadable line was skipped: %w", err))
			continue
		}
		if err != nil {
			failure = err
			break
		}
		s.handle(line)
		if s.out.WaitRoom(s.ctx) != nil {
			break
		}
	}
	s.rpc.stop()
	s.end(failure)
}

// handle dispatches one line.
func (s *session) handle(line []byte) {
	msg, err := codexapp.Decode(line)
	switch m := msg.(type) {
	case nil:
		s.protocolError(line, err)
	case *codexapp.Response:
		s.rpc.deliver(m)
	case *codexapp.Request:
		s.serverRequest(m, err)
	case *codexapp.Notification:
		if err != nil {
			s.protocolError(line, err)
			return
		}
		s.notification(m)
	}
}

// protocolError reports a line the driver could not read; the session goes
// on. The line is kept as Raw (as a JSON string when it is not JSON).
func (s *session) protocolError(line []byte, err error) {
	s.log.Warn("codex: unreadable app-server line", "err", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m.event(agent.KindError, rawOf(line))
	e.Error = &agent.Error{Code: agent.ErrorProtocol, Message: err.Error()}
	s.out.Add(e)
}

// rawOf is line as a JSON value: itself when it is JSON, else a string.
func rawOf(line []byte) json.RawMessage {
	if line == nil {
		return nil
	}
	if json.Valid(line) {
		return line
	}
	b, _ := json.Marshal(string(line)) // invalid UTF-8 becomes U+FFFD
	return b
}

// notification maps a notification; turn ends and settled requests first
// resolve the approvals they clear.
func (s *session) notification(n *codexapp.Notification) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var events []agent.Event
	switch p := n.Payload.(type) {
	case *codexapp.ServerRequestResolvedNotification:
		// Answered by us (already resolved), or withdrawn by Codex.
		if e, ok := s.approvals.settleByRequest(p.RequestID, s.withdrawn(), s.m, n.Raw()); ok {
			events = append(events, e)
		}
	case *codexapp.TurnNotification:
		if p.Method() == codexapp.MethodTurnCompleted {
			cause := agent.CauseTurnEnded
			if p.Turn.Status == codexapp.TurnInterrupted {
				cause = agent.CauseInterrupted
			}
			events = append(events, s.approvals.clear(cause, s.m, s.now())...)
			s.turnEnded(p.Turn.ID)
		} else if s.turnOn && s.turnID == "" {
			s.turnID = p.Turn.ID
		}
	}
	events = append(events, s.m.notification(n)...)
	s.record(events)
	s.out.Add(events...)
}

// withdrawn is the resolution of an approval Codex settled itself.
func (s *session) withdrawn() agent.Resolution {
	return agent.Resolution{Decision: agent.Deny, Reason: "codex withdrew the request", Cause: agent.CauseAgent, At: s.now()}
}

// turnEnded forgets the running turn; call with mu held.
func (s *session) turnEnded(id string) {
	s.turnOn, s.turnID, s.lastTurn = false, "", id
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// record keeps the session's completed file changes; call with mu held.
func (s *session) record(events []agent.Event) {
	for _, e := range events {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemFileChange {
			s.changes = append(s.changes, *e.Item)
		}
	}
}

// end reports the session's end: closed by the host, or the app-server
// exited (a running turn fails, open approvals are cleared).
func (s *session) end(failure error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	if s.timer != nil {
		s.timer.Stop()
	}
	info := &agent.SessionInfo{Agent: Name, NativeID: s.thread, Reason: "closed"}
	var why *agent.Error
	if !s.closing {
		info.Reason = "exited"
		msg := "the app-server exited"
		if failure != nil && !errors.Is(failure, io.EOF) {
			msg = failure.Error()
		}
		why = &agent.Error{Code: agent.ErrorAgentExit, Message: msg}
	}
	// A turn the host's close ends is interrupted (why is nil), not failed.
	events := s.approvals.clear(agent.CauseTurnEnded, s.m, s.now())
	events = append(events, s.m.abort(why)...)
	e := s.m.event(agent.KindSessionEnded, nil)
	e.TurnID, e.Session, e.Error = "", info, why
	s.out.Add(append(events, e)...)
}

// Events yields the session's events in order, and stops after
// session.ended.
func (s *session) Events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return s.out.Events(ctx)
}

// EventBatches is Events in the batches the events became ready in
// (agent.Batcher).
func (s *session) EventBatches(ctx context.Context) iter.Seq2[[]agent.Event, error] {
	return s.out.Batches(ctx)
}

// Configure sets the model of the turns that follow: codex app-server
// takes one with each turn/start and keeps it for the thread.
func (s *session) Configure(_ context.Context, set agent.Settings) error {
	if err := s.d.Capabilities().CheckSettings("codex", set); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.closing {
		return agent.ErrSessionEnded
	}
	if set.Model != "" {
		s.model = set.Model
	}
	return nil
}

// Prompt starts a turn.
func (s *session) Prompt(ctx context.Context, p agent.Prompt) error {
	s.mu.Lock()
	switch {
	case s.ended || s.closing:
		s.mu.Unlock()
		return agent.ErrSessionEnded
	case s.turnOn:
		s.mu.Unlock()
		return agent.ErrTurnInProgress
	}
	if err := p.ValidateImages(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.turnOn = true
	thread, model := s.thread, s.model
	s.mu.Unlock()
	var res codexapp.TurnStartResponse
	err := s.rpc.call(ctx, &codexapp.TurnStartParams{ThreadID: thread, Input: userInput(p), Model: model}, &res)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.turnID == "" {
			s.turnOn = false
		}
		return fmt.Errorf("codex: prompt: %w", err)
	}
	if res.Turn.ID == s.lastTurn || !s.turnOn {
		return nil // it completed already
	}
	s.turnID = res.Turn.ID
	if t := s.d.cfg.TurnTimeout; t > 0 {
		id := res.Turn.ID
		s.timer = time.AfterFunc(t, func() { s.interruptPastLimit(id) })
	}
	return nil
}

// userInput is a prompt as the turn's input: its images, then its text.
func userInput(p agent.Prompt) []codexapp.UserInput {
	in := make([]codexapp.UserInput, 0, len(p.Images)+1)
	for _, img := range p.Images {
		in = append(in, codexapp.ImageInput(img.MediaType, img.Data))
	}
	return append(in, codexapp.TextInput(p.Text)...)
}

// interruptPastLimit interrupts turn id, which ran past
// driver.Config.TurnTimeout; the turn then fails with turn_limit. It runs
// on the timer's goroutine, which the session's wait group owns once it
// has begun (a closing session has no turn to limit).
func (s *session) interruptPastLimit(id string) {
	s.mu.Lock()
	current := s.turnOn && s.turnID == id && !s.closing
	if current {
		s.m.limited = true
		s.wg.Add(1)
	}
	thread := s.thread
	s.mu.Unlock()
	if !current {
		return
	}
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(s.ctx, answerTimeout)
	defer cancel()
	if err := s.rpc.call(ctx, &codexapp.TurnInterruptParams{ThreadID: thread, TurnID: id}, nil); err != nil {
		s.log.Warn("codex: interrupting a turn past its timeout", "turn", id, "err", err)
	}
}

// Steer adds input to the running turn.
func (s *session) Steer(ctx context.Context, p agent.Prompt) error {
	s.mu.Lock()
	thread, turn, ended := s.thread, s.turnID, s.ended
	s.mu.Unlock()
	switch {
	case ended:
		return agent.ErrSessionEnded
	case turn == "":
		return agent.ErrNoTurn
	}
	if err := p.ValidateImages(); err != nil {
		return err
	}
	err := s.rpc.call(ctx, &codexapp.TurnSteerParams{ThreadID: thread, ExpectedTurnID: turn, Input: userInput(p)}, nil)
	if err != nil {
		return fmt.Errorf("codex: steer: %w", err)
	}
	return nil
}

// Interrupt interrupts the running turn; its pending approvals are resolved
// (interrupted) first.
func (s *session) Interrupt(ctx context.Context) error {
	s.mu.Lock()
	thread, turn, ended := s.thread, s.turnID, s.ended
	if turn != "" {
		s.out.Add(s.approvals.clear(agent.CauseInterrupted, s.m, s.now())...)
	}
	s.mu.Unlock()
	switch {
	case ended:
		return agent.ErrSessionEnded
	case turn == "":
		return agent.ErrNoTurn
	}
	if err := s.rpc.call(ctx, &codexapp.TurnInterruptParams{ThreadID: thread, TurnID: turn}, nil); err != nil {
		return fmt.Errorf("codex: interrupt: %w", err)
	}
	return nil
}

// Messages is the thread's conversation from Codex's own history (its
// rollout), so a resumed thread shows its past.
func (s *session) Messages(ctx context.Context) ([]agent.Item, error) {
	turns, err := s.history(ctx)
	if err != nil {
		return nil, err
	}
	var out []agent.Item
	for _, t := range turns {
		for i := range t.Items {
			out = append(out, toItem(&t.Items[i], true))
		}
	}
	return out, nil
}

// history reads the thread's turns. A thread that has had no turn has no
// rollout yet, and so no history.
func (s *session) history(ctx context.Context) ([]codexapp.Turn, error) {
	s.mu.Lock()
	thread, ended, started := s.thread, s.ended, s.lastTurn != "" || s.turnOn
	s.mu.Unlock()
	if ended {
		return nil, agent.ErrSessionEnded
	}
	var res codexapp.ThreadReadResponse
	err := s.rpc.call(ctx, &codexapp.ThreadReadParams{ThreadID: thread, IncludeTurns: true}, &res)
	if err != nil {
		if !started && errors.Is(err, ErrAppServer) {
			return nil, nil
		}
		return nil, fmt.Errorf("codex: read thread: %w", err)
	}
	return res.Thread.Turns, nil
}

// Diff is the thread's file changes: every change of its completed file
// change items, from Codex's history and this session's items, in order,
// with Codex's unified diffs.
func (s *session) Diff(ctx context.Context) ([]agent.FileChange, error) {
	turns, err := s.history(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []agent.FileChange
	add := func(it agent.Item) {
		if it.Type != agent.ItemFileChange || it.Status != agent.ItemDone || seen[it.ID] {
			return
		}
		seen[it.ID] = true
		out = append(out, it.Changes...)
	}
	for _, t := range turns {
		for i := range t.Items {
			add(toItem(&t.Items[i], true))
		}
	}
	s.mu.Lock()
	for _, it := range s.changes {
		add(it)
	}
	s.mu.Unlock()
	return out, nil
}

// Close ends the app-server and every goroutine of the session, and waits.
func (s *session) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.out.Add(s.approvals.clear(agent.CauseTurnEnded, s.m, s.now())...)
		s.mu.Unlock()
		err := s.conn.Close()
		var exit *transport.ExitError
		if errors.As(err, &exit) {
			err = nil // ended by us
		}
		s.closeErr = err
		s.cancel()
		s.wg.Wait()
	})
	return s.closeErr
}
