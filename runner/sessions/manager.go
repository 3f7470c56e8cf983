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
	// ErrTooManySessions: Config.MaxSessions sessions are live.
	ErrTooManySessions = errors.New("sessions: too many sessions")
	// ErrWorkspace: the session's workspace repository could not be made,
	// so it cannot keep its history; the session ends.
	ErrWorkspace = errors.New("sessions: workspace preparation failed")
	// ErrAhead: a reopen names a seq past the session's log by more than
	// a crash can lose.
	ErrAhead = errors.New("sessions: the client is ahead of the session's log")
	// ErrLive: a reopen names a session that is still live.
	ErrLive = errors.New("sessions: the session is live")
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
	Log         eventlog.Log
	Approvals   *approvals.Store
	// ApprovalTimeout is how long an approval waits before its default
	// (deny) applies; zero means it waits until its session ends.
	ApprovalTimeout time.Duration
	// MaxSessions bounds the live sessions (0: no bound).
	MaxSessions int
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
	// Native: the session's client speaks the agent's own protocol
	// (protocol v1), and its events carry every line of the agent's;
	// Relay: the control side of it too.
	Native bool `json:"native,omitempty"`
	Relay  bool `json:"relay,omitempty"`
	// Runner names the fleet runner the session lives on (empty on a
	// runner alone).
	Runner string `json:"runner,omitempty"`
	// Model and Mode are what the session was started with or last set
	// to (Configure); empty is the agent's default.
	Model string `json:"model,omitempty"`
	Mode  string `json:"mode,omitempty"`
	// InputSeq is the last numbered input line of a native client that
	// the session's agent was given (see Core.Input).
	InputSeq uint64 `json:"input_seq,omitempty"`
}

// CreateRequest starts a session.
type CreateRequest struct {
	Agent       string
	WorkspaceID string
	Model       string
	// Mode is one of the agent's modes to start in (empty: its first).
	Mode string
	// Resume continues the agent's conversation of that native id.
	Resume string
	// Fork starts a new conversation from Resume's (where the agent can).
	Fork bool
	// Options are the driver's own start options (agent.StartRequest's).
	Options json.RawMessage
	// Native and Relay are agent.StartRequest's: a client that speaks the
	// agent's own protocol (protocol v1). A native session's id is the
	// agent's conversation id where the agent lets it be chosen.
	Native, Relay bool
	// Runner asks a fleet to place the session on that runner (a lone
	// runner ignores it).
	Runner string
	// MCPServers are MCP servers the agent connects to, checked against
	// the transports its driver takes (agent.Capabilities.MCP). The
	// session keeps them for a reopen; its Info does not show them (their
	// env and headers may hold the client's secrets).
	MCPServers []agent.MCPServer
}

// record is what the index keeps of a session: its Info, and what a
// reopen starts its agent with again.
type record struct {
	Info
	Options json.RawMessage `json:"options,omitempty"`
	// MCPServers are the client's MCP servers, which a reopen starts the
	// agent with again.
	MCPServers []agent.MCPServer `json:"mcp_servers,omitempty"`
	// PastItems counts the items of the agent's conversation from before
	// the session (one created to resume it), which its driver reports
	// and the log does not hold; the log holds everything after.
	PastItems int `json:"past_items,omitempty"`
	// DenyTools are the tools a client denied for the rest of the
	// session (rules.go).
	DenyTools []string `json:"deny_tools,omitempty"`
}

// Manager runs canonical sessions. Its methods are safe for concurrent
// use.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	sessions  map[string]*session
	liveCount int // sessions started and not yet ended (MaxSessions)
	closing   bool
	wg        sync.WaitGroup
	feed      *feed
	index     *index
	// encoders are buffers events are encoded into on their way to the
	// log, which copies them: one per concurrent append, reused.
	encoders sync.Pool
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
	m.dropOldFeed()
	return m, nil
}

// oldFeedName is where a runner before the feed was the log's own
// numbering kept a second copy of every event.
const oldFeedName = "runner-feed"

// dropOldFeed deletes that copy from a log an earlier version wrote: the
// log's own feed numbers events from now on.
func (m *Manager) dropOldFeed() {
	names, err := m.cfg.Log.Sessions()
	if err != nil || !slices.Contains(names, oldFeedName) {
		return
	}
	if err := m.cfg.Log.Delete(oldFeedName); err != nil {
		m.log.Warn("the old runner-wide feed could not be deleted", "err", err)
		return
	}
	m.log.Info("the old copy of the runner-wide feed was deleted: the event log numbers the feed itself now")
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
// begins logging its events; the workspace's repository and its "before"
// snapshot are made meanwhile (see Prompt).
func (m *Manager) Create(ctx context.Context, req CreateRequest) (Info, error) {
	d, err := m.driver(req.Agent)
	if err != nil {
		return Info{}, err
	}
	caps := d.Capabilities()
	switch {
	case req.Fork && req.Resume == "":
		return Info{}, fmt.Errorf("%w: fork needs the conversation to fork (resume)", ErrInvalidRequest)
	case (req.Native || req.Relay) && !caps.Native:
		return Info{}, &agent.UnsupportedError{Agent: req.Agent, Capability: "native sessions"}
	case (req.Resume != "" && !caps.Resume) || (req.Fork && !caps.Fork):
		what := map[bool]string{true: "fork", false: "resume"}[req.Fork]
		return Info{}, &agent.UnsupportedError{Agent: req.Agent, Capability: what}
	}
	if err := caps.CheckSettings(req.Agent, agent.Settings{Mode: req.Mode}); err != nil {
		return Info{}, err
	}
	if err := agent.CheckMCPServers(req.Agent, caps.MCP, req.MCPServers); err != nil {
		return Info{}, err // before the workspace is taken
	}
	id := newID()
	start := agent.StartRequest{Resume: req.Resume, Fork: req.Fork, Model: req.Model, Mode: req.Mode, Options: req.Options,
		Native: req.Native || req.Relay, Relay: req.Relay, HostKeepsHistory: true, MCPServers: req.MCPServers}
	if start.Native && req.Resume == "" {
		id = newNativeID()
		start.NativeID = id
	}
	rec := record{Info: Info{ID: id, Agent: req.Agent, WorkspaceID: req.WorkspaceID, State: StateIdle, Created: m.cfg.Now(),
		Native: start.Native, Relay: req.Relay, Model: req.Model, Mode: req.Mode}, Options: req.Options, MCPServers: req.MCPServers}
	s, err := m.start(ctx, d, rec, start)
	if err != nil {
		return Info{}, err
	}
	return s.snapshot(), nil
}

// pastItems is how many items a resumed conversation had before the
// session, as its driver reports them (0 when it keeps the whole history).
func pastItems(ctx context.Context, a agent.Session) int {
	_, err := a.Messages(ctx)
	var elsewhere *agent.HistoryElsewhereError
	if errors.As(err, &elsewhere) {
		return len(elsewhere.Past)
	}
	return 0
}

// Reopen starts a session that has ended again, under its id and in its
// workspace: its agent resumes the conversation (its native id), and its
// log goes on from its last seq. lastSeq is the last seq the client saw:
// a crash may have lost the events after the log's end, and the log then
// numbers on after lastSeq, so no seq is given twice. A native session
// keeps being one; relay says whether its client speaks the control side
// this time.
func (m *Manager) Reopen(ctx context.Context, id string, lastSeq uint64, relay bool) (Info, error) {
	return m.reopen(ctx, id, lastSeq, relay, nil)
}

// MCPReopener is a core that can reopen a session with other MCP servers
// than those it was started with.
type MCPReopener interface {
	ReopenWithMCP(ctx context.Context, id string, lastSeq uint64, relay bool, servers []agent.MCPServer) (Info, error)
}

var _ MCPReopener = (*Manager)(nil)

// ReopenWithMCP is Reopen with servers, checked as Create checks them, in
// place of the session's MCP servers; the session keeps them for its next
// reopen.
func (m *Manager) ReopenWithMCP(ctx context.Context, id string, lastSeq uint64, relay bool, servers []agent.MCPServer) (Info, error) {
	return m.reopen(ctx, id, lastSeq, relay, &servers)
}

// reopen reopens session id, with servers in place of its MCP servers
// when servers is not nil.
func (m *Manager) reopen(ctx context.Context, id string, lastSeq uint64, relay bool, servers *[]agent.MCPServer) (Info, error) {
	if m.ShuttingDown() {
		return Info{}, ErrShuttingDown // before the log, which may be closed already
	}
	old, err := m.get(id)
	if err != nil {
		return Info{}, err
	}
	old.mu.Lock()
	rec, ended := old.rec, old.ended
	old.mu.Unlock()
	if !ended {
		return Info{}, fmt.Errorf("%w: %s", ErrLive, id)
	}
	select { // its workspace is let go once its pump is done
	case <-old.done:
	case <-ctx.Done():
		return Info{}, ctx.Err()
	}
	d, err := m.driver(rec.Agent)
	if err != nil {
		return Info{}, err
	}
	if !d.Capabilities().Resume || rec.NativeID == "" {
		return Info{}, &agent.UnsupportedError{Agent: rec.Agent, Capability: "resume"}
	}
	if servers != nil {
		if err := agent.CheckMCPServers(rec.Agent, d.Capabilities().MCP, *servers); err != nil {
			return Info{}, err
		}
		rec.MCPServers = *servers
	}
	if err := m.skipTo(id, lastSeq); err != nil {
		return Info{}, err
	}
	rec.Relay = relay && rec.Native
	rec.State, rec.TurnID = StateIdle, ""
	s, err := m.start(ctx, d, rec, agent.StartRequest{Resume: rec.NativeID, Model: rec.Model, Mode: rec.Mode, Options: rec.Options,
		Native: rec.Native, Relay: rec.Relay, HostKeepsHistory: true, MCPServers: rec.MCPServers})
	if err != nil {
		return Info{}, err
	}
	return s.snapshot(), nil
}

// skipTo leaves a gap in session id's log up to seq, when a crash lost
// the events a client saw there (at most what a crash can lose).
func (m *Manager) skipTo(id string, seq uint64) error {
	if seq == 0 {
		return nil
	}
	last, err := m.cfg.Log.Last(id)
	if err != nil || seq <= last {
		return err
	}
	if err := m.cfg.Log.Skip(id, seq); err != nil {
		if errors.Is(err, eventlog.ErrAhead) {
			return fmt.Errorf("%w: %w", ErrAhead, err)
		}
		return err
	}
	m.log.Warn("a client saw events the log lost in a crash; numbering goes on after them",
		"session", id, "log_last", last, "client_last", seq)
	return nil
}

// driver is the driver of kind, or why there is none.
func (m *Manager) driver(kind string) (agent.Driver, error) {
	d, ok := m.cfg.Drivers[kind]
	if ok {
		return d, nil
	}
	if why, known := m.cfg.Unavailable[kind]; known {
		return nil, fmt.Errorf("%w: %s is not available on this runner: %s", ErrUnknownAgent, kind, why)
	}
	return nil, fmt.Errorf("%w: %q (have %v)", ErrUnknownAgent, kind, m.agentNames())
}

// start claims the workspace, starts the agent and the pump of a session
// (new, or reopened over an ended one of the same id).
func (m *Manager) start(ctx context.Context, d agent.Driver, rec record, req agent.StartRequest) (*session, error) {
	if err := m.reserve(); err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			m.unreserve()
		}
	}()
	ws, err := m.cfg.Workspaces.Claim(ctx, rec.WorkspaceID)
	if err != nil {
		return nil, err
	}
	home, err := m.cfg.Workspaces.Home(rec.WorkspaceID)
	if err != nil {
		ws.Release()
		return nil, err
	}
	id := rec.ID
	req.Workspace, req.Home = ws.Path(), home
	req.Claim = func(r agent.Resolution) (agent.Resolution, error) { return m.cfg.Approvals.Resolve(id, r) }
	prep := prepareWorkspace(ws, id, m.log)
	agentSession, err := d.Start(ctx, req)
	m.cfg.Observer.AgentStarted(rec.Agent, err)
	if err != nil {
		prep.abandon()
		ws.Release()
		m.log.Error("agent did not start", "session", id, "agent", rec.Agent, "workspace", rec.WorkspaceID, "err", err)
		return nil, fmt.Errorf("%w: %s: %w", ErrAgentStart, rec.Agent, err)
	}
	rec.NativeID = agentSession.NativeID()
	if last, err := m.cfg.Log.Last(id); err == nil {
		rec.LastSeq = last
	}
	if req.Resume != "" && rec.LastSeq == 0 {
		rec.PastItems = pastItems(ctx, agentSession)
	}
	s := newSession(m, rec, agentSession, ws, prep)
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		_ = agentSession.Close()
		prep.abandon()
		ws.Release()
		return nil, ErrShuttingDown
	}
	m.sessions[id] = s
	m.wg.Add(1)
	started = true
	m.mu.Unlock()
	s.save()
	go s.pump()
	m.log.Info("session started", "session", id, "agent", rec.Agent, "workspace", rec.WorkspaceID, "resumed", req.Resume != "")
	return s, nil
}

// reserve takes a live session's slot under MaxSessions (unreserve, or
// the session's end, gives it back).
func (m *Manager) reserve() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closing:
		return ErrShuttingDown
	case m.cfg.MaxSessions > 0 && m.liveCount >= m.cfg.MaxSessions:
		return fmt.Errorf("%w: %d are live", ErrTooManySessions, m.liveCount)
	}
	m.liveCount++
	return nil
}

func (m *Manager) unreserve() {
	m.mu.Lock()
	m.liveCount--
	m.mu.Unlock()
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

// Live is how many sessions are started and not yet ended, those being
// started included: what MaxSessions counts. It costs no more with many
// sessions than with few, unlike List.
func (m *Manager) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.liveCount
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
func (m *Manager) Prompt(ctx context.Context, id string, p agent.Prompt) error {
	s, err := m.get(id)
	if err != nil {
		return err
	}
	if err := s.prepared(ctx); err != nil {
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
	s.requests.add(p.RequestID)
	if err := s.agent.Prompt(ctx, p); err != nil {
		s.requests.withdraw(p.RequestID)
		s.turnRefused()
		return err
	}
	return nil
}

// native is the session's agent as a native session: one started for a
// client that speaks the agent's protocol.
func (m *Manager) native(ctx context.Context, id string) (*session, agent.NativeSession, error) {
	s, err := m.get(id)
	if err != nil {
		return nil, nil, err
	}
	ns, ok := s.agent.(agent.NativeSession)
	if !ok || !s.rec.Native {
		return nil, nil, &agent.UnsupportedError{Agent: s.rec.Agent, Capability: "native input"}
	}
	if err := s.prepared(ctx); err != nil {
		return nil, nil, err
	}
	return s, ns, nil
}

// Input writes a line of the agent's own protocol from a native client
// (as the agent's driver allows it). A user line that starts a turn is a
// turn as a prompt is: a shutdown's grace waits for it.
func (m *Manager) Input(ctx context.Context, id string, n uint64, line []byte) error {
	s, ns, err := m.native(ctx, id)
	if err != nil {
		return err
	}
	if !s.claimInput(n) {
		return nil // a resend of a line already given
	}
	m.mu.Lock()
	closing := m.closing
	m.mu.Unlock()
	if closing {
		return ErrShuttingDown
	}
	return ns.Input(ctx, line)
}

// Control sends a control request of the agent's own protocol for a
// native client and returns the agent's answer.
func (m *Manager) Control(ctx context.Context, id, subtype string, params json.RawMessage) (json.RawMessage, error) {
	_, ns, err := m.native(ctx, id)
	if err != nil {
		return nil, err
	}
	return ns.Control(ctx, subtype, params)
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

// ShuttingDown reports whether a shutdown (or its grace) has begun: a
// session that ends now ends because the runner stops, and may be
// reopened later.
func (m *Manager) ShuttingDown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closing
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
		s.stopGrace()
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

// newNativeID is a native session's id: a UUID (version 4), the form
// Claude Code takes for a conversation's id.
func newNativeID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
