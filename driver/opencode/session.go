package opencode

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/internal/outbox"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// options are the StartRequest.Options OpenCode takes.
type options struct {
	// Agent is OpenCode's agent for the prompts (build, plan, …); empty
	// is its default.
	Agent string `json:"agent,omitempty"`
	// ToolNetwork asks for network in the commands OpenCode runs, if the
	// runner's sandbox allows it (driver.Config.Sandbox.ToolNetwork).
	ToolNetwork bool `json:"tool_network,omitempty"`
}

func parseOptions(raw json.RawMessage) (options, error) {
	var o options
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return o, fmt.Errorf("%w: options: %w", ErrInvalidRequest, err)
	}
	return o, nil
}

// parseModel splits "provider/model".
func parseModel(model string) (*oc.PromptModel, error) {
	if model == "" {
		return nil, nil
	}
	provider, id, ok := strings.Cut(model, "/")
	if !ok || provider == "" || id == "" {
		return nil, fmt.Errorf("%w: model %q is not provider/model", ErrInvalidRequest, model)
	}
	return &oc.PromptModel{ProviderID: provider, ModelID: id}, nil
}

// session is one OpenCode conversation on a server of its own. One
// goroutine follows the event stream; the methods may be called from any
// goroutine; the mapper is shared under mu and events leave in the order
// they were made.
type session struct {
	d      *Driver
	srv    *server
	api    *client
	native string
	model  *oc.PromptModel
	opts   options

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	mapper *mapper
	ended  bool
	// children are the sessions of the session's subagents (task tool).
	children map[string]bool
	timer    *time.Timer // the running turn's time limit
	// stream is the event stream being read, for tests that cut it.
	stream *eventStream

	out       *outbox.Outbox
	closeOnce sync.Once
}

// Start starts `opencode serve` in the workspace and creates the session,
// or resumes or forks req.Resume. The session's events begin with
// session.started.
func (d *Driver) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	opts, err := parseOptions(req.Options)
	if err != nil {
		return nil, err
	}
	if opts.ToolNetwork && d.cfg.Sandbox != nil && !d.cfg.Sandbox.ToolNetwork {
		return nil, fmt.Errorf("%w: tool_network is not allowed on this runner", ErrInvalidRequest)
	}
	model, err := parseModel(req.Model)
	if err != nil {
		return nil, err
	}
	if req.Mode != "" {
		opts.Agent = req.Mode // its modes are its primary agents
	}
	if req.Fork && req.Resume == "" {
		return nil, fmt.Errorf("%w: fork needs the session to fork (Resume)", ErrInvalidRequest)
	}
	if err := agent.CheckMCPServers(agentName, mcpTransports(), req.MCPServers); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StartTimeout)
	defer cancel()
	srv, err := d.launch(ctx, req, opts.ToolNetwork)
	if err != nil {
		return nil, err
	}
	s := &session{d: d, srv: srv, api: newClient(srv.url, srv.password, d.calls), model: model, opts: opts, out: outbox.New(64), children: map[string]bool{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// Subscribe before the session exists, so that nothing it says is
	// missed.
	stream, err := s.subscribe(ctx)
	if err == nil {
		err = s.attach(ctx, req)
	}
	if err != nil {
		if stream != nil {
			stream.close()
		}
		s.cancel()
		s.api.close()
		srv.close()
		return nil, err
	}
	s.stream = stream
	s.out.Add(s.mapper.startSession(req.Model, req.Workspace))
	s.wg.Add(1)
	go s.follow(stream)
	return s, nil
}

// attach opens the OpenCode session and sets up its mapping. A resumed or
// forked session's past is marked as such, so that a reconciliation does
// not report it as new.
func (s *session) attach(ctx context.Context, req agent.StartRequest) error {
	native, err := s.open(ctx, req)
	if err != nil {
		return err
	}
	s.native = native
	s.mapper = newMapper(native, s.d.now)
	if req.Resume != "" {
		msgs, err := s.history(ctx)
		if err != nil {
			return err
		}
		s.mapper.seedHistory(msgs)
	}
	return nil
}

// open creates, resumes or forks the OpenCode session and returns its id.
func (s *session) open(ctx context.Context, req agent.StartRequest) (string, error) {
	var info oc.Session
	switch {
	case req.Resume != "" && req.Fork:
		path, err := oc.SessionForkPath(req.Resume)
		if err != nil {
			return "", fmt.Errorf("%w: resume: %w", ErrInvalidRequest, err)
		}
		if err := s.api.do(ctx, http.MethodPost, path, oc.ForkRequest{}, &info); err != nil {
			return "", fmt.Errorf("opencode: fork %s: %w", req.Resume, err)
		}
	case req.Resume != "":
		path, err := oc.SessionPath(req.Resume)
		if err != nil {
			return "", fmt.Errorf("%w: resume: %w", ErrInvalidRequest, err)
		}
		if err := s.api.do(ctx, http.MethodGet, path, nil, &info); err != nil {
			return "", fmt.Errorf("opencode: resume %s: %w", req.Resume, err)
		}
	default:
		if err := s.api.do(ctx, http.MethodPost, oc.PathSessions, oc.CreateSessionRequest{}, &info); err != nil {
			return "", fmt.Errorf("opencode: create session: %w", err)
		}
	}
	if info.ID == "" {
		return "", fmt.Errorf("opencode: the server gave a session with no id")
	}
	return info.ID, nil
}

func (s *session) NativeID() string { return s.native }

func (s *session) Events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return s.out.Events(ctx)
}

// EventBatches is Events in the batches the events became ready in
// (agent.Batcher).
func (s *session) EventBatches(ctx context.Context) iter.Seq2[[]agent.Event, error] {
	return s.out.Batches(ctx)
}

// Prompt starts a turn: the turn starts at once, and the prompt goes to
// the async endpoint, whose answer comes on the event stream.
func (s *session) Prompt(ctx context.Context, p agent.Prompt) error {
	s.mu.Lock()
	switch {
	case s.ended:
		s.mu.Unlock()
		return agent.ErrSessionEnded
	case s.mapper.running():
		s.mu.Unlock()
		return agent.ErrTurnInProgress
	}
	if err := p.ValidateImages(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.out.Add(s.mapper.startTurn()...)
	turn := s.mapper.turn
	if limit := s.d.cfg.TurnTimeout; limit > 0 {
		s.timer = time.AfterFunc(limit, func() { s.turnTimedOut(turn) })
	}
	s.mu.Unlock()
	path, err := oc.SessionPromptAsyncPath(s.native)
	if err == nil {
		body := promptRequest(p)
		s.mu.Lock()
		body.Model, body.Agent = s.model, s.opts.Agent
		s.mu.Unlock()
		err = s.api.do(ctx, http.MethodPost, path, body, nil)
	}
	if err != nil {
		s.mu.Lock()
		if s.mapper.turn == turn { // it never ran
			s.out.Add(s.mapper.abort(&agent.Error{Code: agent.ErrorAgent, Message: "the prompt was not accepted: " + err.Error()})...)
			s.stopTimerLocked()
		}
		s.mu.Unlock()
		return fmt.Errorf("opencode: prompt: %w", err)
	}
	return nil
}

// Configure switches the primary agent (the mode) or the model of the
// prompts that follow: OpenCode takes both with each prompt.
func (s *session) Configure(_ context.Context, set agent.Settings) error {
	if err := s.d.Capabilities().CheckSettings(agentName, set); err != nil {
		return err
	}
	var model *oc.PromptModel
	if set.Model != "" {
		m, err := parseModel(set.Model)
		if err != nil {
			return &agent.InvalidSettingsError{Agent: agentName, Reason: fmt.Sprintf("model %q is not provider/model", set.Model)}
		}
		model = m
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return agent.ErrSessionEnded
	}
	if set.Mode != "" {
		s.opts.Agent = set.Mode
	}
	if model != nil {
		s.model = model
	}
	return nil
}

// promptRequest is a prompt as OpenCode's parts: its images as files with
// data: URLs, then its text.
func promptRequest(p agent.Prompt) oc.PromptRequest {
	parts := make([]oc.PartInput, 0, len(p.Images)+1)
	for _, img := range p.Images {
		parts = append(parts, oc.FileInput{Mime: img.MediaType, URL: "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)})
	}
	return oc.PromptRequest{Parts: append(parts, oc.TextInput{Text: p.Text})}
}

// Steer is not offered: OpenCode's API has no call that adds to a running
// turn, and this driver does not pass a prompt during a turn on.
func (s *session) Steer(context.Context, agent.Prompt) error {
	return &agent.UnsupportedError{Agent: agentName, Capability: "steer"}
}

// Interrupt aborts the running turn; its approvals are resolved as
// interrupted at once, and the turn completes interrupted when OpenCode
// says it is idle.
func (s *session) Interrupt(ctx context.Context) error {
	s.mu.Lock()
	if s.ended || !s.mapper.running() {
		s.mu.Unlock()
		return agent.ErrNoTurn
	}
	s.mapper.interrupted = true
	s.out.Add(s.mapper.clearApprovals(agent.CauseInterrupted, "the turn was interrupted")...)
	s.mu.Unlock()
	return s.abort(ctx)
}

func (s *session) abort(ctx context.Context) error {
	path, err := oc.SessionAbortPath(s.native)
	if err == nil {
		err = s.api.do(ctx, http.MethodPost, path, nil, nil)
	}
	if err != nil {
		return fmt.Errorf("opencode: interrupt: %w", err)
	}
	return nil
}

// turnTimedOut aborts turn if it still runs; it then fails with
// turn_limit.
func (s *session) turnTimedOut(turn string) {
	s.mu.Lock()
	if s.ended || s.mapper.turn != turn {
		s.mu.Unlock()
		return
	}
	s.mapper.limited = true
	s.out.Add(s.mapper.clearApprovals(agent.CauseInterrupted, "the turn timed out")...)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	if err := s.abort(ctx); err != nil {
		s.d.log.Warn("opencode: abort after the turn timeout", "session", s.native, "err", err)
	}
}

func (s *session) stopTimerLocked() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// Messages is the conversation so far, from OpenCode's own history (so a
// resumed session shows its past), as completed items.
func (s *session) Messages(ctx context.Context) ([]agent.Item, error) {
	msgs, err := s.history(ctx)
	if err != nil {
		return nil, err
	}
	return historyItems(s.native, msgs), nil
}

func (s *session) history(ctx context.Context) ([]oc.MessageWithParts, error) {
	path, err := oc.SessionMessagesPath(s.native)
	if err != nil {
		return nil, err
	}
	var msgs []oc.MessageWithParts
	if err := s.api.do(ctx, http.MethodGet, path, nil, &msgs); err != nil {
		return nil, fmt.Errorf("opencode: messages: %w", err)
	}
	return msgs, nil
}

// Diff is the session's file changes, from OpenCode's own record: the
// summary of each turn's changes on its user message (paths relative to the
// workspace, unified diffs). OpenCode 1.18's GET /session/{id}/diff
// without a message id answers nothing, so the turns are put together
// here: a file keeps its first kind (added, then modified, is added) unless
// a later turn deletes it, and its patches follow one another.
func (s *session) Diff(ctx context.Context) ([]agent.FileChange, error) {
	msgs, err := s.history(ctx)
	if err != nil {
		return nil, err
	}
	return sessionDiff(msgs), nil
}

func sessionDiff(msgs []oc.MessageWithParts) []agent.FileChange {
	var changes []agent.FileChange
	at := map[string]int{}
	for _, msg := range msgs {
		if msg.Info.Role != oc.RoleUser || msg.Info.Summary == nil {
			continue
		}
		for _, f := range msg.Info.Summary.Diffs {
			kind := agent.ChangeUpdate
			switch f.Status {
			case oc.FileAdded:
				kind = agent.ChangeAdd
			case oc.FileDeleted:
				kind = agent.ChangeDelete
			}
			i, seen := at[f.File]
			if !seen {
				at[f.File] = len(changes)
				changes = append(changes, agent.FileChange{Path: f.File, Kind: kind, Diff: f.Patch})
				continue
			}
			c := &changes[i]
			if kind == agent.ChangeDelete || c.Kind == agent.ChangeDelete {
				c.Kind = kind
			}
			c.Diff += f.Patch
		}
	}
	return changes
}

// Close ends the server and the reader, and waits for both. A running
// turn fails and pending approvals are resolved as the turn's end.
func (s *session) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.srv.close()
		s.wg.Wait()
		s.api.close()
	})
	return nil
}
