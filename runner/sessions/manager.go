// Package sessions owns the runner's canonical sessions: it starts a
// session of any agent kind (an agent.Driver) in a workspace, numbers its
// events and writes them to the durable event log before anyone sees
// them, keeps its approvals in the durable approvals store, and serves
// sessions, events (replayed from any seq, then live) and approvals to
// every front end alike. It knows no agent's wire format and no front
// end's protocol.
package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/workspace"
)

// interruptWait bounds the wait for a turn's end after the interrupt a
// shutdown sends when the turn's grace is over.
const interruptWait = 2 * time.Second

var (
	// ErrUnknownAgent: no driver has that name.
	ErrUnknownAgent = errors.New("sessions: no such agent")
	// ErrNotFound: no session has that id.
	ErrNotFound = errors.New("sessions: no such session")
	// ErrEnded: the session has ended.
	ErrEnded = errors.New("sessions: the session has ended")
	// ErrShuttingDown: the manager is stopping and takes no new session
	// or turn.
	ErrShuttingDown = errors.New("sessions: shutting down")
	// ErrAgentStart: the agent did not start (its error is wrapped too).
	ErrAgentStart = errors.New("sessions: the agent did not start")
	// ErrInvalidRequest: a request that contradicts itself.
	ErrInvalidRequest = errors.New("sessions: invalid request")
)

// Config assembles a Manager. Drivers, Workspaces, Log and Approvals are
// required.
type Config struct {
	Drivers map[string]agent.Driver
	// Unavailable says, for agent kinds the runner knows but cannot
	// offer, why (a CLI not installed, an untested version): a session
	// asked of one is refused with the reason.
	Unavailable map[string]string
	Workspaces  *workspace.Manager
	Log         *eventlog.Log
	Approvals   *approvals.Store
	// ApprovalTimeout is how long an approval waits before its default
	// (deny) applies; zero means it waits until its session ends.
	ApprovalTimeout time.Duration
	// IndexDir, when set, keeps a record of every session there, so a
	// restarted runner lists its sessions, serves their events, and ends
	// in their logs the ones it left running (with their approvals
	// denied). Empty keeps sessions in memory only.
	IndexDir string
	Now      func() time.Time
	Logger   *slog.Logger
	// Observer learns of agent starts and logged events (metrics); nil
	// observes nothing.
	Observer Observer
}

// State is where a session is.
type State string

const (
	StateIdle    State = "idle"    // waiting for a prompt
	StateRunning State = "running" // a turn is in progress
	StateEnded   State = "ended"
)

// Info describes a session.
type Info struct {
	ID          string    `json:"id"`
	Agent       string    `json:"agent"`
	WorkspaceID string    `json:"workspace_id"`
	NativeID    string    `json:"native_id,omitempty"`
	State       State     `json:"state"`
	Created     time.Time `json:"created"`
	// LastSeq is the seq of the session's newest event.
	LastSeq uint64 `json:"last_seq"`
	// TurnID is the running turn's, while one runs.
	TurnID string `json:"turn_id,omitempty"`
}

// CreateRequest starts a session.
type CreateRequest struct {
	Agent       string
	WorkspaceID string
	Model       string
	// Resume continues the agent's conversation of that native id.
	Resume string
	// Fork starts a new conversation from Resume's (where the agent can).
	Fork bool
	// Options are the driver's own start options (agent.StartRequest's).
	Options json.RawMessage
}

// Manager runs canonical sessions. Its methods are safe for concurrent
// use.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	closing  bool
	wg       sync.WaitGroup
	feed     *feed
	index    *index
}

// New checks cfg and returns a Manager.
func New(cfg Config) (*Manager, error) {
	if len(cfg.Drivers) == 0 || cfg.Workspaces == nil || cfg.Log == nil || cfg.Approvals == nil {
		return nil, errors.New("sessions: Config needs Drivers, Workspaces, Log and Approvals")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	idx, err := openIndex(cfg.IndexDir)
	if err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, log: log, sessions: map[string]*session{}, feed: newFeed(), index: idx}
	if err := m.recover(); err != nil {
		return nil, err
	}
	if err := m.settleOrphans(); err != nil {
		return nil, err
	}
	return m, nil
}

// settleOrphans denies the approvals a previous run left pending: their
// sessions' agents are gone with it, so nothing could act on an answer,
// and nobody should wait for one.
func (m *Manager) settleOrphans() error {
	pending, err := m.cfg.Approvals.Pending()
	if err != nil {
		return fmt.Errorf("sessions: approvals: %w", err)
	}
	done := map[string]bool{}
	for _, rec := range pending {
		id := rec.Approval.SessionID
		if done[id] {
			continue
		}
		done[id] = true
		if _, err := m.cfg.Approvals.ResolveSession(id, agent.CauseTurnEnded, "the runner restarted"); err != nil {
			return fmt.Errorf("sessions: approvals of %s: %w", id, err)
		}
		m.log.Info("approvals of a session from before the restart denied", "session", id)
	}
	return nil
}

// Agents lists the agent kinds and what each can do.
func (m *Manager) Agents() map[string]agent.Capabilities {
	out := make(map[string]agent.Capabilities, len(m.cfg.Drivers))
	for name, d := range m.cfg.Drivers {
		out[name] = d.Capabilities()
	}
	return out
}

// Unavailable says, for the agent kinds the runner knows but cannot offer,
// why.
func (m *Manager) Unavailable() map[string]string { return maps.Clone(m.cfg.Unavailable) }

// Create starts a session: it takes the workspace, starts the agent and
// begins logging its events.
func (m *Manager) Create(ctx context.Context, req CreateRequest) (Info, error) {
	d, ok := m.cfg.Drivers[req.Agent]
	if !ok {
		if why, known := m.cfg.Unavailable[req.Agent]; known {
			return Info{}, fmt.Errorf("%w: %s is not available on this runner: %s", ErrUnknownAgent, req.Agent, why)
		}
		return Info{}, fmt.Errorf("%w: %q (have %v)", ErrUnknownAgent, req.Agent, m.agentNames())
	}
	if req.Fork && req.Resume == "" {
		return Info{}, fmt.Errorf("%w: fork needs the conversation to fork (resume)", ErrInvalidRequest)
	}
	if caps := d.Capabilities(); (req.Resume != "" && !caps.Resume) || (req.Fork && !caps.Fork) {
		what := map[bool]string{true: "fork", false: "resume"}[req.Fork]
		return Info{}, &agent.UnsupportedError{Agent: req.Agent, Capability: what}
	}
	m.mu.Lock()
	closing := m.closing
	m.mu.Unlock()
	if closing {
		return Info{}, ErrShuttingDown
	}
	ws, err := m.cfg.Workspaces.Claim(ctx, req.WorkspaceID)
	if err != nil {
		return Info{}, err
	}
	home, err := m.cfg.Workspaces.Home(req.WorkspaceID)
	if err != nil {
		ws.Release()
		return Info{}, err
	}
	id := newID()
	// The workspace as the session found it: the session's diff is what
	// changed since (whatever the agent reports, or fails to).
	before, err := ws.Snapshot(ctx, "tether: before session "+id)
	if err != nil {
		m.log.Warn("workspace snapshot failed: the session's diff is the agent's own", "session", id, "agent", req.Agent, "err", err)
	}
	agentSession, err := d.Start(ctx, agent.StartRequest{Workspace: ws.Path(), Home: home, Resume: req.Resume, Fork: req.Fork, Model: req.Model, Options: req.Options})
	m.cfg.Observer.AgentStarted(req.Agent, err)
	if err != nil {
		ws.Release()
		m.log.Error("agent did not start", "session", id, "agent", req.Agent, "workspace", req.WorkspaceID, "err", err)
		return Info{}, fmt.Errorf("%w: %s: %w", ErrAgentStart, req.Agent, err)
	}
	s := newSession(m, Info{ID: id, Agent: req.Agent, WorkspaceID: req.WorkspaceID, State: StateIdle,
		Created: m.cfg.Now(), NativeID: agentSession.NativeID()}, agentSession, ws)
	s.before = before
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		_ = agentSession.Close()
		ws.Release()
		return Info{}, ErrShuttingDown
	}
	m.sessions[s.info.ID] = s
	m.wg.Add(1)
	m.mu.Unlock()
	s.save()
	go s.pump()
	m.log.Info("session started", "session", s.info.ID, "agent", req.Agent, "workspace", req.WorkspaceID)
	return s.snapshot(), nil
}

func (m *Manager) agentNames() []string {
	var names []string
	for name := range m.cfg.Drivers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (m *Manager) get(id string) (*session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return s, nil
}

// Get describes one session.
func (m *Manager) Get(id string) (Info, error) {
	s, err := m.get(id)
	if err != nil {
		return Info{}, err
	}
	return s.snapshot(), nil
}

// List describes every session, oldest first.
func (m *Manager) List() []Info {
	m.mu.Lock()
	all := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	out := make([]Info, 0, len(all))
	for _, s := range all {
		out = append(out, s.snapshot())
	}
	slices.SortFunc(out, func(a, b Info) int { return a.Created.Compare(b.Created) })
	return out
}

// Prompt starts a turn; once a shutdown has begun, it is
// ErrShuttingDown.
func (m *Manager) Prompt(ctx context.Context, id, text string) error {
	s, err := m.get(id)
	if err != nil {
		return err
	}
	// Noted under mu: a Drain that begins after sees the turn coming.
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		return ErrShuttingDown
	}
	s.awaitTurn()
	m.mu.Unlock()
	if err := s.agent.Prompt(ctx, agent.Prompt{Text: text}); err != nil {
		s.turnRefused()
		return err
	}
	return nil
}

// Interrupt stops the session's turn.
func (m *Manager) Interrupt(ctx context.Context, id string) error {
	s, err := m.get(id)
	if err != nil {
		return err
	}
	return s.agent.Interrupt(ctx)
}

// Close ends a session and waits for its last event to be logged.
func (m *Manager) Close(ctx context.Context, id string) error {
	s, err := m.get(id)
	if err != nil {
		return err
	}
	return s.close(ctx)
}

// Drain begins a graceful stop: from now on no session is created and no
// turn started (ErrShuttingDown), while the turns in progress run on —
// their approvals answered, their events logged and read — until each has
// ended or ctx ends. Turns still running then are interrupted, and Drain
// waits up to interruptWait for them to end. Shutdown ends the sessions
// after it.
func (m *Manager) Drain(ctx context.Context) {
	m.mu.Lock()
	m.closing = true
	all := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() { s.finishTurn(ctx) })
	}
	wg.Wait()
}

// Shutdown closes every session at once and waits for them (Drain first
// lets their turns finish).
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.closing = true
	all := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	var errs []error
	for _, s := range all {
		errs = append(errs, s.close(ctx))
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "ses_" + hex.EncodeToString(b[:])
}
