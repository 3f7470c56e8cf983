package acp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/internal/outbox"
	"github.com/tetherhq/tether/transport"
)

// outboxHighWater is how many events may wait for the reader of Events.
const outboxHighWater = 64

// cancelTimeout bounds sending session/cancel.
const cancelTimeout = 10 * time.Second

// session is one ACP session on its own agent process.
type session struct {
	d    *Driver
	conn transport.Conn
	rpc  *acpsdk.ClientSideConnection
	ws   workspace
	log  *slog.Logger
	now  func() time.Time
	out  *outbox.Outbox
	host bool // the host keeps the history

	ctx    context.Context // the connection's life
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	m           *mapper
	caps        agent.Capabilities // what the agent's initialize declared
	native      string
	turnOn      bool
	interrupted bool
	approvals   map[string]*approval
	nApprovals  int
	changes     []agent.FileChange
	ended       bool
	closing     bool
	// replayed is closed by the update that ends a loaded session's
	// replay (Spec.ReplayAfterLoad).
	replayed chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// start runs the agent, initializes the connection and opens the session.
func start(ctx context.Context, d *Driver, cmd *transport.Command, req agent.StartRequest) (*session, error) {
	conn, err := cmd.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: start agent: %w", d.spec.Name, err)
	}
	s := &session{d: d, conn: conn, ws: workspace{root: req.Workspace}, log: d.cfg.Logger, now: d.cfg.Now,
		out: outbox.New(outboxHighWater), m: newMapper(d.spec.Name, d.cfg.Now, !req.HostKeepsHistory),
		host: req.HostKeepsHistory, approvals: map[string]*approval{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	lines := &lineStream{ctx: s.ctx, conn: conn, log: s.log}
	s.rpc = acpsdk.NewClientSideConnection(client{s}, lines, lines)
	s.rpc.SetLogger(s.log)
	s.wg.Add(1)
	go s.watch()
	if err := s.open(ctx, req); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// watch ends the session when the agent's output ends.
func (s *session) watch() {
	defer s.wg.Done()
	<-s.rpc.Done()
	s.end()
}

// open initializes and starts, resumes or loads the session.
func (s *session) open(ctx context.Context, req agent.StartRequest) error {
	name := s.d.spec.Name
	init, err := s.rpc.Initialize(ctx, acpsdk.InitializeRequest{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientInfo:      &acpsdk.Implementation{Name: "tether", Version: "1"},
		ClientCapabilities: acpsdk.ClientCapabilities{Fs: acpsdk.FileSystemCapabilities{
			ReadTextFile: s.d.spec.FileSystem, WriteTextFile: s.d.spec.FileSystem}},
	})
	if err != nil {
		return fmt.Errorf("%s: initialize: %w", name, err)
	}
	caps := capabilitiesOf(init.AgentCapabilities, s.d.spec)
	s.mu.Lock()
	s.caps = caps
	s.mu.Unlock()
	if err := agent.CheckMCPServers(name, caps.MCP, req.MCPServers); err != nil {
		return err
	}
	mcp := mcpServers(req.MCPServers)
	var id acpsdk.SessionId
	var modes *acpsdk.SessionModeState
	var models *acpsdk.SessionModelState
	switch {
	case req.Resume == "":
		res, err := s.rpc.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: req.Workspace, McpServers: mcp})
		if err != nil {
			return fmt.Errorf("%s: session/new: %w", name, err)
		}
		id, modes, models = res.SessionId, res.Modes, res.Models
	case init.AgentCapabilities.SessionCapabilities.Resume != nil:
		id = acpsdk.SessionId(req.Resume)
		res, err := s.rpc.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: id, Cwd: req.Workspace, McpServers: mcp})
		if err != nil {
			return fmt.Errorf("%s: session/resume: %w", name, err)
		}
		modes, models = res.Modes, res.Models
	case init.AgentCapabilities.LoadSession:
		id = acpsdk.SessionId(req.Resume)
		// The history is replayed as updates outside any turn: the mapper
		// passes them over.
		replayed := s.expectReplay()
		res, err := s.rpc.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: id, Cwd: req.Workspace, McpServers: mcp})
		if err != nil {
			return fmt.Errorf("%s: session/load: %w", name, err)
		}
		if err := waitReplay(ctx, replayed); err != nil {
			return fmt.Errorf("%s: session/load: %w", name, err)
		}
		modes, models = res.Modes, res.Models
	default:
		return &agent.UnsupportedError{Agent: name, Capability: "resume"}
	}
	s.d.learn(withSettings(caps, s.d.spec, modes, models))
	if req.Mode != "" {
		if err := s.setMode(ctx, id, req.Mode); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.native = string(id)
	s.m.native = s.native
	e := s.m.event(agent.KindSessionStarted)
	e.Session = &agent.SessionInfo{Agent: name, NativeID: s.native, Model: req.Model, Cwd: req.Workspace}
	s.out.Add(e)
	return nil
}

// capabilitiesOf is what an initialize answer declares.
func capabilitiesOf(c acpsdk.AgentCapabilities, spec Spec) agent.Capabilities {
	mcp := []agent.MCPTransport{agent.MCPStdio} // every ACP agent takes stdio
	if c.McpCapabilities.Http {
		mcp = append(mcp, agent.MCPHTTP)
	}
	if c.McpCapabilities.Sse {
		mcp = append(mcp, agent.MCPSSE)
	}
	return agent.Capabilities{
		Resume: (c.LoadSession || c.SessionCapabilities.Resume != nil) && !spec.NoResume,
		Diff:   true,
		Images: c.PromptCapabilities.Image,
		Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeAlways},
		MCP:    mcp,
	}
}

func (s *session) NativeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.native
}

func (s *session) Events(ctx context.Context) iter.Seq2[agent.Event, error] { return s.out.Events(ctx) }

// EventBatches is Events in the batches the events became ready in.
func (s *session) EventBatches(ctx context.Context) iter.Seq2[[]agent.Event, error] {
	return s.out.Batches(ctx)
}

// replayWait bounds the wait for a loaded session's replay to end.
const replayWait = 5 * time.Second

// expectReplay is closed when the replay of a session about to be
// loaded ends, for an agent that replays after its answer
// (Spec.ReplayAfterLoad); nil otherwise.
func (s *session) expectReplay() chan struct{} {
	if !s.d.spec.ReplayAfterLoad {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replayed = make(chan struct{})
	return s.replayed
}

// waitReplay waits, at most replayWait, for replayed to be closed, so the
// replay does not run into the first turn; past the bound the session
// goes on.
func waitReplay(ctx context.Context, replayed chan struct{}) error {
	if replayed == nil {
		return nil
	}
	t := time.NewTimer(replayWait)
	defer t.Stop()
	select {
	case <-replayed:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// update maps one session/update, waiting for room in the outbox so a
// slow reader holds the agent back instead of losing events.
func (s *session) update(n acpsdk.SessionNotification) {
	s.mu.Lock()
	if string(n.SessionId) == s.native || s.native == "" {
		s.emit(s.m.update(n.Update))
	}
	if s.replayed != nil && n.Update.AvailableCommandsUpdate != nil {
		close(s.replayed)
		s.replayed = nil
	}
	s.mu.Unlock()
	_ = s.out.WaitRoom(s.ctx)
}

// Prompt starts a turn: session/prompt runs until the turn ends.
func (s *session) Prompt(ctx context.Context, p agent.Prompt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended || s.closing:
		return agent.ErrSessionEnded
	case s.turnOn:
		return agent.ErrTurnInProgress
	}
	if err := agent.CheckImages(s.d.spec.Name, s.caps, p); err != nil {
		return err
	}
	s.turnOn, s.interrupted = true, false
	s.out.Add(s.m.startTurn(p.RequestID))
	req := acpsdk.PromptRequest{SessionId: acpsdk.SessionId(s.native), Prompt: promptBlocks(p)}
	s.wg.Add(1)
	go s.runTurn(req)
	return nil
}

// promptBlocks is a prompt as content blocks: its images, then its text.
func promptBlocks(p agent.Prompt) []acpsdk.ContentBlock {
	blocks := make([]acpsdk.ContentBlock, 0, len(p.Images)+1)
	for _, img := range p.Images {
		blocks = append(blocks, acpsdk.ImageBlock(base64.StdEncoding.EncodeToString(img.Data), img.MediaType))
	}
	return append(blocks, acpsdk.TextBlock(p.Text))
}

// runTurn waits for the prompt's answer and ends the turn.
func (s *session) runTurn(req acpsdk.PromptRequest) {
	defer s.wg.Done()
	began := s.now()
	res, err := s.rpc.Prompt(s.ctx, req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.turnOn {
		return // the session ended it
	}
	status, why := agent.TurnCompleted, (*agent.Error)(nil)
	switch {
	case err != nil && s.interrupted:
		status = agent.TurnInterrupted
	case err != nil:
		status, why = agent.TurnFailed, &agent.Error{Code: agent.ErrorAgent, Message: err.Error()}
	default:
		status, why = stopStatus(res.StopReason, s.interrupted)
	}
	s.out.Add(s.clearApprovals(agent.CauseTurnEnded)...)
	s.finishTurn(status, why, usageOf(res), s.now().Sub(began))
}

// finishTurn ends the running turn; the caller holds the lock.
func (s *session) finishTurn(status agent.TurnStatus, why *agent.Error, usage *agent.Usage, took time.Duration) {
	s.emit(s.m.endTurn(status, why, usage, took))
	s.turnOn = false
}

// emit hands events over, keeping the changes of completed edits for
// Diff; the caller holds the lock.
func (s *session) emit(events []agent.Event) {
	for _, e := range events {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemFileChange && e.Item.Status == agent.ItemDone {
			for _, c := range e.Item.Changes {
				s.changes = upsertChange(s.changes, c)
			}
		}
	}
	s.out.Add(events...)
}

// stopStatus is a stop reason as a turn's end.
func stopStatus(r acpsdk.StopReason, interrupted bool) (agent.TurnStatus, *agent.Error) {
	switch r {
	case acpsdk.StopReasonCancelled:
		return agent.TurnInterrupted, nil
	case acpsdk.StopReasonMaxTokens, acpsdk.StopReasonMaxTurnRequests:
		return agent.TurnFailed, &agent.Error{Code: agent.ErrorTurnLimit, Message: "the agent stopped: " + string(r)}
	case acpsdk.StopReasonRefusal:
		return agent.TurnFailed, &agent.Error{Code: agent.ErrorAgent, Message: "the agent refused to go on"}
	}
	if interrupted {
		return agent.TurnInterrupted, nil
	}
	return agent.TurnCompleted, nil
}

// usageOf is the turn's usage: ACP's usage field, else the token count
// Gemini CLI puts in the answer's _meta.quota.
func usageOf(res acpsdk.PromptResponse) *agent.Usage {
	if u := res.Usage; u != nil {
		out := &agent.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens)}
		if u.CachedReadTokens != nil {
			out.CacheReadTokens = int64(*u.CachedReadTokens)
		}
		if u.ThoughtTokens != nil {
			out.ReasoningTokens = int64(*u.ThoughtTokens)
		}
		return out
	}
	quota, _ := res.Meta["quota"].(map[string]any)
	count, _ := quota["token_count"].(map[string]any)
	in, ok1 := count["input_tokens"].(float64)
	out, ok2 := count["output_tokens"].(float64)
	if !ok1 && !ok2 {
		return nil
	}
	return &agent.Usage{InputTokens: int64(in), OutputTokens: int64(out)}
}

func (s *session) Steer(context.Context, agent.Prompt) error {
	return &agent.UnsupportedError{Agent: s.d.spec.Name, Capability: "steer"}
}

// Interrupt cancels the running turn: pending approvals are answered
// cancelled and session/cancel is sent; the prompt then ends cancelled.
func (s *session) Interrupt(ctx context.Context) error {
	s.mu.Lock()
	if !s.turnOn {
		s.mu.Unlock()
		return agent.ErrNoTurn
	}
	s.interrupted = true
	s.out.Add(s.clearApprovals(agent.CauseInterrupted)...)
	id := s.native
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, cancelTimeout)
	defer cancel()
	if err := s.rpc.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(id)}); err != nil {
		return fmt.Errorf("%s: session/cancel: %w", s.d.spec.Name, err)
	}
	return nil
}

// requestPermission opens an approval and waits for its resolution (or
// the connection's end).
func (s *session) requestPermission(ctx context.Context, req acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	s.mu.Lock()
	if !s.turnOn || s.interrupted || s.closing {
		s.mu.Unlock()
		return cancelled(), nil
	}
	tc := req.ToolCall
	u := &acpsdk.SessionToolCallUpdate{ToolCallId: tc.ToolCallId, Kind: tc.Kind, Title: tc.Title,
		Content: tc.Content, RawInput: tc.RawInput}
	events := s.m.toolUpdate(u) // names a call without an id
	it := s.m.tools[string(u.ToolCallId)]
	s.nApprovals++
	ap := &approval{id: s.native + "-approval-" + strconv.Itoa(s.nApprovals), item: it.ID, options: req.Options,
		answer: make(chan acpsdk.RequestPermissionResponse, 1)}
	s.approvals[ap.id] = ap
	e := s.m.event(agent.KindApprovalRequested)
	a := approvalOf(ap.id, *it, req)
	a.Agent, a.TurnID, a.Created = s.d.spec.Name, s.m.turn, s.now()
	e.Approval = &a
	s.emit(append(events, e))
	s.mu.Unlock()
	select {
	case res := <-ap.answer:
		return res, nil
	case <-ctx.Done():
		return cancelled(), nil
	case <-s.ctx.Done():
		return cancelled(), nil
	}
}

// Resolve answers a pending approval with the option its decision means.
func (s *session) Resolve(_ context.Context, r agent.Resolution) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ap, ok := s.approvals[r.ApprovalID]
	if !ok {
		return fmt.Errorf("%w: %s", agent.ErrUnknownApproval, r.ApprovalID)
	}
	if ap.first != nil {
		return &agent.AlreadyResolvedError{First: *ap.first}
	}
	if r.Cause == "" {
		r.Cause = agent.CauseClient
	}
	if r.At.IsZero() {
		r.At = s.now()
	}
	s.out.Add(s.settle(ap, r))
	return nil
}

// settle records an approval's first resolution and answers the agent;
// the caller holds the lock.
func (s *session) settle(ap *approval, r agent.Resolution) agent.Event {
	ap.first = &r
	if r.Decision != agent.Allow {
		s.m.denied[ap.item] = true
	}
	ap.answer <- pick(ap.options, r)
	e := s.m.event(agent.KindApprovalResolved)
	e.Resolution = &r
	return e
}

// clearApprovals resolves every pending approval with cause (a deny the
// agent hears as cancelled); the caller holds the lock.
func (s *session) clearApprovals(cause agent.Cause) []agent.Event {
	var events []agent.Event
	for _, ap := range s.approvals {
		if ap.first == nil {
			events = append(events, s.settle(ap, agent.Resolution{ApprovalID: ap.id, Decision: agent.Deny, Cause: cause, At: s.now()}))
		}
	}
	return events
}

// Messages are the session's completed items.
func (s *session) Messages(context.Context) ([]agent.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host {
		return nil, &agent.HistoryElsewhereError{}
	}
	return append([]agent.Item(nil), s.m.done...), nil
}

// Diff is the files the session's completed edits changed.
func (s *session) Diff(context.Context) ([]agent.FileChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.FileChange(nil), s.changes...), nil
}

// end is session.ended, once the agent's output has ended.
func (s *session) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	info := &agent.SessionInfo{Agent: s.d.spec.Name, NativeID: s.native, Reason: "closed"}
	var why *agent.Error
	if !s.closing {
		info.Reason = "exited"
		why = &agent.Error{Code: agent.ErrorAgentExit, Message: "the agent exited"}
	}
	s.out.Add(s.clearApprovals(agent.CauseTurnEnded)...)
	if s.turnOn {
		status := agent.TurnInterrupted
		if why != nil {
			status = agent.TurnFailed
		}
		s.finishTurn(status, why, nil, 0)
	}
	e := s.m.event(agent.KindSessionEnded)
	e.TurnID, e.Session, e.Error = "", info, why
	s.out.Add(e)
	s.out.Close()
}

// Close ends the agent and waits for the session's goroutines.
func (s *session) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.out.Add(s.clearApprovals(agent.CauseTurnEnded)...)
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
