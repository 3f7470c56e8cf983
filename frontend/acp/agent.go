package acp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

var _ acpsdk.Agent = (*front)(nil)
var _ acpsdk.AgentLoader = (*front)(nil)

// Initialize declares protocol version 1 and what the agent behind can
// honour. The core of a root opens with the first session, so the
// capabilities come from the configuration.
func (f *front) Initialize(ctx context.Context, p acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	caps := f.cfg.Capabilities
	sc := acpsdk.SessionCapabilities{List: &acpsdk.SessionListCapabilities{}, Close: &acpsdk.SessionCloseCapabilities{}}
	if caps.Resume {
		sc.Resume = &acpsdk.SessionResumeCapabilities{}
	}
	return acpsdk.InitializeResponse{
		ProtocolVersion: acpsdk.ProtocolVersion(acpsdk.ProtocolVersionNumber),
		AgentCapabilities: acpsdk.AgentCapabilities{
			LoadSession:         caps.Resume, // a load of an ended session resumes its agent
			PromptCapabilities:  acpsdk.PromptCapabilities{EmbeddedContext: true, Image: caps.Images},
			SessionCapabilities: sc,
			McpCapabilities:     mcpCapabilities(caps),
		},
		AgentInfo:   &acpsdk.Implementation{Name: "tether", Title: acpsdk.Ptr("Tether (" + f.cfg.Agent + ")"), Version: f.cfg.Version},
		AuthMethods: []acpsdk.AuthMethod{},
	}, nil
}

// Authenticate: the agents behind tether take their credentials from
// the runner's environment, so no method is offered and none is needed.
func (f *front) Authenticate(ctx context.Context, p acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	return acpsdk.AuthenticateResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no authentication method %q: none is needed", p.MethodId)})
}

func (f *front) NewSession(ctx context.Context, p acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	servers, err := f.mcpServers(p.McpServers)
	if err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	core, ws, err := f.coreFor(ctx, p.Cwd)
	if err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	create := func() (sessions.Info, error) {
		return core.Create(ctx, sessions.CreateRequest{Agent: f.cfg.Agent, WorkspaceID: ws, MCPServers: servers})
	}
	info, err := create()
	if err != nil && mcpError(err) == nil && f.freeWorkspace(ctx, core, ws, "") {
		info, err = create()
	}
	if err != nil {
		return acpsdk.NewSessionResponse{}, rpcError(err)
	}
	f.note(info.ID, p.Cwd)
	f.cfg.Logger.Info("acp: session created", "session", info.ID, "workspace", ws, "mcp_servers", len(servers))
	modes, options := f.settings(core, info)
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(info.ID), Modes: modes, ConfigOptions: options}, nil
}

// session finds a session of this front end's agent in the core of cwd
// (or in those open), reopening it when it has ended and reopen is set
// (with servers in place of its MCP servers when there are some).
func (f *front) session(ctx context.Context, id, cwd string, reopen bool, servers ...agent.MCPServer) (Core, sessions.Info, error) {
	var core Core
	var info sessions.Info
	if cwd != "" {
		c, _, err := f.coreFor(ctx, cwd)
		if err != nil {
			return nil, sessions.Info{}, err
		}
		if info, err = c.Get(id); err != nil || info.Agent != f.cfg.Agent {
			return nil, sessions.Info{}, unknownSession(id)
		}
		core = c
		f.note(id, filepath.Join(filepath.Dir(filepath.Clean(cwd)), info.WorkspaceID))
	} else {
		var ok bool
		if core, info, ok = f.lookup(id); !ok {
			return nil, sessions.Info{}, unknownSession(id)
		}
	}
	if reopen && info.State == sessions.StateEnded {
		last, ws := info.LastSeq, info.WorkspaceID
		var err error
		info, err = reopenSession(ctx, core, id, last, servers)
		if err != nil && mcpError(err) == nil && f.freeWorkspace(ctx, core, ws, id) {
			info, err = reopenSession(ctx, core, id, last, servers)
		}
		if err != nil {
			return nil, sessions.Info{}, rpcError(err)
		}
	}
	return core, info, nil
}

// LoadSession reopens an earlier session and replays its history as
// session/update notifications, all of them before the answer.
func (f *front) LoadSession(ctx context.Context, p acpsdk.LoadSessionRequest) (acpsdk.LoadSessionResponse, error) {
	servers, err := f.mcpServers(p.McpServers)
	if err != nil {
		return acpsdk.LoadSessionResponse{}, err
	}
	core, info, err := f.session(ctx, string(p.SessionId), p.Cwd, true, servers...)
	if err != nil {
		return acpsdk.LoadSessionResponse{}, err
	}
	if err := f.replay(ctx, core, info); err != nil {
		return acpsdk.LoadSessionResponse{}, rpcError(err)
	}
	modes, options := f.settings(core, info)
	return acpsdk.LoadSessionResponse{Modes: modes, ConfigOptions: options}, nil
}

// ResumeSession reopens an earlier session without its history.
func (f *front) ResumeSession(ctx context.Context, p acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	servers, err := f.mcpServers(p.McpServers)
	if err != nil {
		return acpsdk.ResumeSessionResponse{}, err
	}
	core, info, err := f.session(ctx, string(p.SessionId), p.Cwd, true, servers...)
	if err != nil {
		return acpsdk.ResumeSessionResponse{}, err
	}
	modes, options := f.settings(core, info)
	return acpsdk.ResumeSessionResponse{Modes: modes, ConfigOptions: options}, nil
}

// freeWorkspace makes room in workspace ws, which one session at a time
// works in, for another session of the editor's: it closes the idle
// sessions of ours there (they stay listed, and load again). It reports
// whether it closed one; a session running a turn is left alone.
func (f *front) freeWorkspace(ctx context.Context, core Core, ws, except string) bool {
	closed := false
	for _, info := range core.List() {
		if info.WorkspaceID != ws || info.ID == except || info.Agent != f.cfg.Agent || info.State != sessions.StateIdle {
			continue
		}
		if err := core.Close(ctx, info.ID); err != nil {
			f.cfg.Logger.Warn("acp: idle session not closed", "session", info.ID, "err", err)
			continue
		}
		f.cfg.Logger.Info("acp: idle session closed to free its workspace", "session", info.ID, "workspace", ws)
		closed = true
	}
	return closed
}

// ListSessions lists this agent's sessions, newest first: those in cwd's
// workspace, or without cwd those of every root opened so far.
func (f *front) ListSessions(ctx context.Context, p acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	out := acpsdk.ListSessionsResponse{Sessions: []acpsdk.SessionInfo{}}
	roots, cores := f.opened()
	if p.Cwd != nil {
		c, _, err := f.coreFor(ctx, *p.Cwd)
		if err != nil {
			return out, nil // not a workspace tether acp can serve: none of ours
		}
		roots, cores = []string{filepath.Dir(filepath.Clean(*p.Cwd))}, []Core{c}
	}
	var list []sessions.Info
	seen := map[string]bool{}
	for i, core := range cores {
		for _, info := range core.List() {
			if info.Agent != f.cfg.Agent || seen[info.ID] {
				continue
			}
			cwd := filepath.Join(roots[i], info.WorkspaceID)
			if p.Cwd != nil && filepath.Clean(*p.Cwd) != cwd {
				continue
			}
			seen[info.ID] = true
			if p.Cwd != nil {
				f.note(info.ID, cwd)
			}
			list = append(list, info)
		}
	}
	slices.SortFunc(list, func(a, b sessions.Info) int { return b.Created.Compare(a.Created) })
	for _, info := range list {
		out.Sessions = append(out.Sessions, acpsdk.SessionInfo{SessionId: acpsdk.SessionId(info.ID), Cwd: f.cwdOf(info),
			UpdatedAt: acpsdk.Ptr(info.Created.UTC().Format("2006-01-02T15:04:05Z"))})
	}
	return out, nil
}

func (f *front) CloseSession(ctx context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	core, _, err := f.session(ctx, string(p.SessionId), "", false)
	if err != nil {
		return acpsdk.CloseSessionResponse{}, err
	}
	// A prompt in flight ends cancelled, as after session/cancel, not
	// with whatever the session's end makes of its turn.
	_ = f.Cancel(ctx, acpsdk.CancelNotification{SessionId: p.SessionId})
	if err := core.Close(ctx, string(p.SessionId)); err != nil && !errors.Is(err, sessions.ErrEnded) {
		return acpsdk.CloseSessionResponse{}, rpcError(err)
	}
	return acpsdk.CloseSessionResponse{}, nil
}

// Cancel interrupts the session's running turn; its prompt then ends
// cancelled, and the core answers its pending approvals as interrupted.
func (f *front) Cancel(ctx context.Context, p acpsdk.CancelNotification) error {
	f.mu.Lock()
	t := f.turns[string(p.SessionId)]
	f.mu.Unlock()
	if t == nil {
		return nil
	}
	core, _, ok := f.lookup(string(p.SessionId))
	if !ok {
		return nil
	}
	t.cancel()
	if err := core.Interrupt(context.WithoutCancel(ctx), string(p.SessionId)); err != nil && !errors.Is(err, agent.ErrNoTurn) {
		f.cfg.Logger.Warn("acp: interrupt", "session", p.SessionId, "err", err)
	}
	return nil
}

func unknownSession(id string) error {
	return acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %q", id)})
}

// rpcError maps the core's errors onto JSON-RPC's.
func rpcError(err error) error {
	var re *acpsdk.RequestError
	switch {
	case errors.As(err, &re):
		return re
	case mcpError(err) != nil:
		return mcpError(err)
	case errors.Is(err, agent.ErrInvalidSettings), errors.Is(err, agent.ErrInvalidImage):
		return acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	case errors.Is(err, sessions.ErrNotFound), errors.Is(err, sessions.ErrUnknownAgent), errors.Is(err, agent.ErrTurnInProgress),
		errors.Is(err, sessions.ErrEnded), errors.Is(err, agent.ErrUnsupported):
		return acpsdk.NewInvalidRequest(map[string]any{"error": err.Error()})
	}
	return acpsdk.NewInternalError(map[string]any{"error": strings.TrimSpace(err.Error())})
}

// replay sends a session's history, up to its last event, as updates.
func (f *front) replay(ctx context.Context, core Core, info sessions.Info) error {
	if info.LastSeq == 0 {
		return nil
	}
	pr := newProjector(f.cwdOf(info))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for e, err := range core.Events(ctx, info.ID, 0) {
		if err != nil {
			return err
		}
		for _, u := range pr.project(e, true) {
			if err := f.conn.SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(info.ID), Update: u}); err != nil {
				return err
			}
		}
		if uint64(e.Seq) >= info.LastSeq {
			return nil
		}
	}
	return nil
}
