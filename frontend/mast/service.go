package mast

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/runner/sessions"
)

// Service answers the semantic commands over the runner's sessions. Its
// methods are safe for concurrent use.
type Service struct {
	Sessions sessions.Core
	// DefaultAgent is the agent kind of a create_session that names none
	// (MAST_DEFAULT_AGENT); empty, or not offered, means the first
	// offered in the registry's default order (driver.Kinds).
	DefaultAgent string
	// By names who answers approvals, for their audit; empty means
	// "orchestrator".
	By     string
	Logger *slog.Logger
}

func (s *Service) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// ErrCommand matches a command the daemon refuses before doing anything:
// a missing field, an unknown type.
var ErrCommand = errors.New("mast: invalid command")

// Handle runs one command and returns its one result. Every failure is an
// error result carrying the reason; nothing is acknowledged that did not
// happen.
func (s *Service) Handle(ctx context.Context, c Command) Result {
	data, err := s.run(ctx, c)
	if err != nil {
		return errResult(c.RequestID, err)
	}
	return okResult(c.RequestID, data)
}

func (s *Service) run(ctx context.Context, c Command) (any, error) {
	if c.RequestID == "" {
		return nil, fmt.Errorf("%w: %s without a requestId", ErrCommand, c.Type)
	}
	needSession := c.Type != commandListSessions && c.Type != commandCreateSession
	if needSession && slices.Contains(Commands(), c.Type) && c.SessionID == "" {
		return nil, fmt.Errorf("%w: %s needs a sessionId", ErrCommand, c.Type)
	}
	switch c.Type {
	case commandListSessions:
		out := []Session{}
		for _, info := range s.Sessions.List() {
			out = append(out, sessionOf(info))
		}
		return out, nil
	case commandCreateSession:
		return s.create(ctx, c.AgentType)
	case commandSendPrompt:
		if c.Text == "" {
			return nil, fmt.Errorf("%w: send_prompt needs a text", ErrCommand)
		}
		return nil, s.prompt(ctx, c)
	case commandApprove, commandDeny:
		if c.PermissionID == "" {
			return nil, fmt.Errorf("%w: %s needs a permissionId", ErrCommand, c.Type)
		}
		return nil, s.resolve(ctx, c)
	case commandGetMessages:
		return s.Messages(ctx, c.SessionID)
	case commandGetDiff:
		changes, err := s.Sessions.Diff(ctx, c.SessionID)
		if err != nil {
			return nil, err
		}
		if changes == nil {
			changes = []agent.FileChange{}
		}
		return map[string]any{"files": changes}, nil
	case commandAbortSession:
		return nil, s.abort(ctx, c.SessionID)
	}
	return nil, fmt.Errorf("%w: Unknown command type: %s", ErrCommand, c.Type)
}

// orchestratorRequest begins the RequestID of every prompt the
// orchestrator sends, which the turn it starts carries in the log: the
// projector tells by it the prompts the orchestrator keeps itself.
const orchestratorRequest = "mast:"

// prompt starts a turn of the orchestrator's prompt. A session that has
// ended (the daemon restarted, its agent exited) is started again first:
// its agent resumes its own conversation, under the same id, its log
// going on.
func (s *Service) prompt(ctx context.Context, c Command) error {
	info, err := s.Sessions.Get(c.SessionID)
	if err != nil {
		return err
	}
	if info.State == sessions.StateEnded {
		_, err := s.Sessions.Reopen(ctx, c.SessionID, 0, false)
		switch {
		case errors.Is(err, sessions.ErrLive): // another prompt resumed it first
		case err != nil:
			return fmt.Errorf("session %s has ended and could not be resumed: %w", c.SessionID, err)
		default:
			s.logger().Info("ended session resumed for a prompt", "session", c.SessionID, "agent", info.Agent)
		}
	}
	return s.Sessions.Prompt(ctx, c.SessionID, agent.Prompt{Text: c.Text, RequestID: orchestratorRequest + c.RequestID})
}

// abort interrupts the session's turn; with none running (or the session
// ended) there is nothing to stop, which is done, as the seed's adapters
// answer it.
func (s *Service) abort(ctx context.Context, sessionID string) error {
	err := s.Sessions.Interrupt(ctx, sessionID)
	if errors.Is(err, agent.ErrNoTurn) || errors.Is(err, agent.ErrSessionEnded) {
		return nil
	}
	return err
}

func sessionOf(info sessions.Info) Session {
	return Session{ID: info.ID, AgentType: agentType(info.Agent), CreatedAt: Timestamp(info.Created), State: string(info.State)}
}

// create starts a session of the asked agent kind (or the default) in a
// workspace of its own.
func (s *Service) create(ctx context.Context, typ string) (Session, error) {
	kind := agentKind(typ)
	if kind == "" {
		kind = s.defaultAgent()
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	info, err := s.Sessions.Create(ctx, sessions.CreateRequest{Agent: kind, WorkspaceID: "mast-" + hex.EncodeToString(b[:])})
	if err != nil {
		return Session{}, err
	}
	return sessionOf(info), nil
}

// defaultAgent is the kind of a session created without one: the
// configured one when it is offered, else the first offered in the
// default order; "" when nothing is (Create then says so).
func (s *Service) defaultAgent() string {
	offered := s.Sessions.Agents()
	if _, ok := offered[agentKind(s.DefaultAgent)]; ok && s.DefaultAgent != "" {
		return agentKind(s.DefaultAgent)
	}
	for _, k := range driver.Kinds() {
		if _, ok := offered[k.Name]; ok {
			return k.Name
		}
	}
	return ""
}

// resolve answers a permission. An unknown one, or one already answered
// (by anyone, or by its expiry or its turn's end), is an error.
func (s *Service) resolve(ctx context.Context, c Command) error {
	if _, err := s.Sessions.Get(c.SessionID); err != nil {
		return err
	}
	d := agent.Allow
	if c.Type == commandDeny {
		d = agent.Deny
	}
	by := s.By
	if by == "" {
		by = "orchestrator"
	}
	_, err := s.Sessions.Resolve(ctx, c.SessionID, agent.Resolution{ApprovalID: c.PermissionID, Decision: d,
		Cause: agent.CauseClient, By: by})
	var already *agent.AlreadyResolvedError
	if errors.As(err, &already) {
		return fmt.Errorf("permission %s was already resolved (%s, %s): %w", c.PermissionID,
			permissionStatus(already.First.Decision), already.First.Cause, err)
	}
	if errors.Is(err, agent.ErrUnknownApproval) {
		return fmt.Errorf("no permission %s in session %s: %w", c.PermissionID, c.SessionID, err)
	}
	return err
}

// Messages is a session's conversation as Mast messages, folded from its
// logged events: the same messages, ids and parts its events announced.
func (s *Service) Messages(ctx context.Context, sessionID string) ([]Message, error) {
	info, err := s.Sessions.Get(sessionID)
	if err != nil {
		return nil, err
	}
	p := newProjector(sessionID)
	if info.LastSeq == 0 {
		return p.conversation(), nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for e, err := range s.Sessions.Events(ctx, sessionID, 0) {
		if err != nil {
			return nil, err
		}
		p.project(e, 0)
		if uint64(e.Seq) >= info.LastSeq {
			break
		}
	}
	return p.conversation(), nil
}
