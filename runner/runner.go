package runner

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/workspace"
)

// DefaultGracePeriod is how long a session outlives its connection.
const DefaultGracePeriod = 60 * time.Second

// interruptTimeout bounds the interrupt Shutdown sends to a turn still
// running at its deadline, and the wait for the turn's end after it.
const interruptTimeout = time.Second

var (
	// ErrTooManySessions: the runner is at Config.MaxSessions.
	ErrTooManySessions = errors.New("runner: too many sessions")
	// ErrSessionNotFound: no live or logged session has that id.
	ErrSessionNotFound = errors.New("runner: session not found")
	// ErrShuttingDown: the runner is stopping and takes no new sessions.
	ErrShuttingDown = errors.New("runner: shutting down")
	// ErrWorkspaceMismatch: a resume named another workspace than the
	// session's own.
	ErrWorkspaceMismatch = errors.New("runner: session belongs to another workspace")
	// ErrInvalidOptions is wrapped by drivers for session options their
	// policy refuses.
	ErrInvalidOptions = errors.New("invalid session options")
	// ErrAhead: the host saw more of the session than its log holds, by
	// more than a crash can lose.
	ErrAhead = errors.New("runner: the host is ahead of the session's log")
	// ErrWorkspace: the session's workspace repository could not be made.
	ErrWorkspace = errors.New("runner: workspace preparation failed")
)

// LastSeq is the highest event seq logged for a session.
func (r *Runner) LastSeq(id string) (uint64, error) { return r.cfg.Log.Last(id) }

// Config wires a Runner.
type Config struct {
	Log         *eventlog.Log
	Workspaces  *workspace.Manager
	Driver      AgentDriver
	GracePeriod time.Duration
	MaxSessions int // 0 = unlimited
	Logger      *slog.Logger
}

// Runner owns the live sessions.
type Runner struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*Session // nil: reserved, still starting
	closing  bool
	wg       sync.WaitGroup // the sessions' Go functions
	opening  sync.WaitGroup // Opens between reserve and their result
}

// New returns a Runner.
func New(cfg Config) (*Runner, error) {
	if cfg.Log == nil || cfg.Workspaces == nil || cfg.Driver == nil {
		return nil, errors.New("runner: Log, Workspaces and Driver are required")
	}
	if cfg.GracePeriod <= 0 {
		cfg.GracePeriod = DefaultGracePeriod
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, log: logger, sessions: map[string]*Session{}}, nil
}

// sessionMeta is what the log keeps to restart a session later.
type sessionMeta struct {
	WorkspaceID string          `json:"workspace_id"`
	Options     json.RawMessage `json:"options,omitempty"`
	Relay       bool            `json:"relay,omitempty"`
}

// OpenRequest describes a session to start or to resume.
type OpenRequest struct {
	WorkspaceID string
	Options     json.RawMessage
	Relay       bool
	// Resume names an earlier session to restart (its agent resumes the
	// conversation). Empty starts a new session.
	Resume string
	// LastSeq is the last event seq the host saw of the resumed session.
	// When the log ends before it, a crash lost the events in between
	// before their commit: the session's numbering goes on after LastSeq,
	// so that the host is never given a seq it saw for another event.
	LastSeq uint64
}

// Lookup returns a live session.
func (r *Runner) Lookup(id string) (*Session, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[id]
	return s, s != nil // a reserved id is not a session yet
}

// Open starts a session: it checks limits, takes the workspace, records
// the session and starts its agent.
func (r *Runner) Open(ctx context.Context, req OpenRequest) (*Session, error) {
	if r.ShuttingDown() {
		return nil, ErrShuttingDown // before the log, which may be closed already
	}
	id, meta, err := r.prepare(req)
	if err != nil {
		return nil, err
	}
	if err := r.cfg.Driver.Validate(meta.Options); err != nil {
		return nil, err
	}
	if err := r.reserve(id); err != nil {
		return nil, err
	}
	defer r.opening.Done()
	s, err := r.start(ctx, id, meta, req)
	if err != nil {
		r.release(id, nil)
		return nil, err
	}
	r.mu.Lock()
	closing := r.closing
	if !closing {
		r.sessions[id] = s
	}
	r.mu.Unlock()
	if closing {
		// Shutdown began while the agent started: it no longer looks for
		// new sessions, so this one ends here.
		s.End("runner shutting down")
		r.release(id, nil)
		return nil, ErrShuttingDown
	}
	return s, nil
}

// prepare picks the session id and its metadata, new or from the log.
func (r *Runner) prepare(req OpenRequest) (string, sessionMeta, error) {
	if req.Resume == "" {
		return newSessionID(), sessionMeta{WorkspaceID: req.WorkspaceID, Options: req.Options, Relay: req.Relay}, nil
	}
	raw, err := r.cfg.Log.Meta(req.Resume)
	switch {
	case errors.Is(err, eventlog.ErrUnknownSession), errors.Is(err, eventlog.ErrInvalidSession):
		return "", sessionMeta{}, fmt.Errorf("%w: %s", ErrSessionNotFound, req.Resume)
	case err != nil:
		// Not "not found": the log failed (or is closed, the runner
		// stopping); the session may well be there.
		return "", sessionMeta{}, fmt.Errorf("runner: session %s: %w", req.Resume, err)
	}
	var meta sessionMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return "", sessionMeta{}, fmt.Errorf("runner: session %s metadata: %w", req.Resume, err)
	}
	if req.WorkspaceID != "" && req.WorkspaceID != meta.WorkspaceID {
		return "", sessionMeta{}, ErrWorkspaceMismatch
	}
	if len(req.Options) > 0 && string(req.Options) != "null" {
		meta.Options = req.Options
	}
	meta.Relay = req.Relay
	return req.Resume, meta, nil
}

// reserve claims a slot for id, so two inits cannot race for it; the
// caller owes r.opening.Done once the Open is decided.
func (r *Runner) reserve(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, taken := r.sessions[id] // live, or reserved by an Open under way
	switch {
	case r.closing:
		return ErrShuttingDown
	case taken:
		return fmt.Errorf("runner: session %s is already live", id)
	case r.cfg.MaxSessions > 0 && len(r.sessions) >= r.cfg.MaxSessions:
		return ErrTooManySessions
	}
	r.sessions[id] = nil // placeholder until started
	r.opening.Add(1)
	return nil
}

func (r *Runner) release(id string, s *Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.sessions[id]; ok && cur == s {
		delete(r.sessions, id)
	}
}

// start takes the workspace, records the session and starts its agent.
// The workspace's repository and "before" snapshot are made meanwhile
// (see preparation): the agent's start is all a session waits for.
func (r *Runner) start(ctx context.Context, id string, meta sessionMeta, req OpenRequest) (*Session, error) {
	ws, err := r.cfg.Workspaces.Claim(ctx, meta.WorkspaceID)
	if err != nil {
		return nil, err
	}
	home, err := r.cfg.Workspaces.Home(meta.WorkspaceID)
	if err != nil {
		ws.Release()
		return nil, err
	}
	if err := r.record(id, meta, req); err != nil {
		ws.Release()
		return nil, err
	}
	prep := r.prepareWorkspace(ws, id)
	agent, err := r.cfg.Driver.Start(ctx, AgentSpec{
		SessionID: id, Workspace: ws.Path(), Home: home,
		Options: meta.Options, Resume: req.Resume != "", Relay: meta.Relay,
	})
	if err != nil {
		prep.cancel()
		<-prep.done
		ws.Release()
		return nil, err
	}
	return newSession(r, id, meta.WorkspaceID, ws, agent, prep), nil
}

// record writes the session's metadata, and for a resume whose host saw
// events the log lost, the gap after them. The metadata is not committed
// on its own: the group commit that carries the session's first events
// (its ready, at the latest) carries it too, so a crash before that commit
// loses the session whole, and resuming it fails with ErrSessionNotFound.
func (r *Runner) record(id string, meta sessionMeta, req OpenRequest) error {
	rawMeta, _ := json.Marshal(meta)
	if err := r.cfg.Log.SetMetaAsync(id, rawMeta); err != nil {
		return err
	}
	if req.Resume == "" || req.LastSeq == 0 {
		return nil
	}
	last, err := r.cfg.Log.Last(id)
	if err != nil {
		return err
	}
	if req.LastSeq <= last {
		return nil
	}
	if err := r.cfg.Log.Skip(id, req.LastSeq); err != nil {
		if errors.Is(err, eventlog.ErrAhead) {
			return fmt.Errorf("%w: %w", ErrAhead, err)
		}
		return err
	}
	r.log.Warn("host saw events the log lost in a crash; numbering goes on after them",
		"session", id, "log_last", last, "host_last", req.LastSeq)
	return nil
}

// preparation is the workspace's repository and its "before" snapshot,
// made while the agent starts. Nothing from the host reaches the agent
// before it is done (see Session.Prepared), so the snapshot holds the
// workspace as it was before the session.
type preparation struct {
	done   chan struct{}
	err    error // the repository could not be made; set before done closes
	cancel context.CancelFunc
}

func (r *Runner) prepareWorkspace(ws *workspace.Workspace, id string) *preparation {
	ctx, cancel := context.WithCancel(context.Background())
	p := &preparation{done: make(chan struct{}), cancel: cancel}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(p.done)
		if err := ws.Prepare(ctx); err != nil {
			p.err = fmt.Errorf("%w: %w", ErrWorkspace, err)
			r.log.Error("workspace preparation failed", "session", id, "err", err)
			return
		}
		if _, err := ws.Snapshot(ctx, "tether: before session "+id); err != nil {
			r.log.Warn("workspace snapshot failed", "session", id, "err", err)
		}
	}()
	return p
}

// ShuttingDown reports whether Shutdown has begun: sessions that end now
// end because the runner stops, and may be resumed from its log later.
func (r *Runner) ShuttingDown() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closing
}

// Sessions returns the live sessions.
func (r *Runner) Sessions() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// Shutdown takes no new sessions, lets turns in progress finish until ctx
// ends, then ends every session and waits for them.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	// Opens under way finish first (bounded by ctx), so every session is
	// seen below; one that is still starting ends itself (see Open).
	opened := make(chan struct{})
	go func() {
		r.opening.Wait()
		close(opened)
	}()
	select {
	case <-opened:
	case <-ctx.Done():
	}
	var wg sync.WaitGroup
	for _, s := range r.Sessions() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-s.Idle():
			case <-ctx.Done():
				// Out of time: interrupt the turn, so the agent stops now
				// (and keeps a consistent conversation for a resume)
				// instead of running on until its exit grace is over.
				// Its end (an interrupted result) is logged if it comes
				// soon.
				ictx, cancel := context.WithTimeout(context.Background(), interruptTimeout)
				if s.agent.Interrupt(ictx) == nil {
					select {
					case <-s.Idle():
					case <-ictx.Done():
					}
				}
				cancel()
			}
			s.End("runner shutting down")
		}()
	}
	wg.Wait()
	r.wg.Wait()
	return r.cfg.Log.Sync(context.WithoutCancel(ctx))
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
