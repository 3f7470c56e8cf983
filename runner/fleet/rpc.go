package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// rpcTimeout bounds a command to another runner; a create waits for the
// agent's start, which takes longer. Each attempt waits attemptTimeout
// for its answer: NATS does not resend a request a failing node lost, so
// the caller does, with the same id.
const (
	rpcTimeout     = 30 * time.Second
	createTimeout  = 2 * time.Minute
	attemptTimeout = 2 * time.Second
	// repliesKept is how long an owner keeps an answer for a retry.
	repliesKept = 2 * time.Minute
	// interestWait is how long a command finds no runner before its
	// session is taken for unknown: a new session's registry entry is
	// written a moment after it is made.
	interestWait = 500 * time.Millisecond
)

// request is a command for the runner that owns a session. ID makes a
// retry of it (the link dropped before its answer came) run it once.
type request struct {
	ID         string            `json:"id"`
	Op         string            `json:"op"`
	Session    string            `json:"session,omitempty"`
	Create     *createRequest    `json:"create,omitempty"`
	Prompt     *agent.Prompt     `json:"prompt,omitempty"`
	Line       []byte            `json:"line,omitempty"`
	N          uint64            `json:"n,omitempty"` // the input line's number
	Subtype    string            `json:"subtype,omitempty"`
	Params     json.RawMessage   `json:"params,omitempty"`
	Resolution *agent.Resolution `json:"resolution,omitempty"`
	Settings   *agent.Settings   `json:"settings,omitempty"`
	LastSeq    uint64            `json:"last_seq,omitempty"`
	Relay      bool              `json:"relay,omitempty"`
	Drain      bool              `json:"drain,omitempty"`
	// Hold names a host's hold on the session, taken for it by runner
	// From; Grace is how long the session outlives its last hold.
	Hold  string        `json:"hold,omitempty"`
	From  string        `json:"from,omitempty"`
	Grace time.Duration `json:"grace,omitempty"`
	// Pace names a reader's pacer, kept for it by the session's runner,
	// From the runner it reads through; LastSeq is where it is.
	Pace string `json:"pace,omitempty"`
}

// createRequest is sessions.CreateRequest on the wire.
type createRequest struct {
	Agent       string          `json:"agent"`
	WorkspaceID string          `json:"workspace_id,omitempty"`
	Model       string          `json:"model,omitempty"`
	Mode        string          `json:"mode,omitempty"`
	Resume      string          `json:"resume,omitempty"`
	Fork        bool            `json:"fork,omitempty"`
	Options     json.RawMessage `json:"options,omitempty"`
	Native      bool            `json:"native,omitempty"`
	Relay       bool            `json:"relay,omitempty"`
	// MCPServers go to the runner that starts the session.
	MCPServers []agent.MCPServer `json:"mcp_servers,omitempty"`
}

type reply struct {
	Error      *wireError         `json:"error,omitempty"`
	Info       *sessions.Info     `json:"info,omitempty"`
	Raw        json.RawMessage    `json:"raw,omitempty"`
	Resolution *agent.Resolution  `json:"resolution,omitempty"`
	Items      []agent.Item       `json:"items,omitempty"`
	Changes    []agent.FileChange `json:"changes,omitempty"`
}

// wireError carries an error across runners so that errors.Is on the
// asking side matches what it matched on the owner.
type wireError struct {
	Code    string            `json:"code,omitempty"`
	Message string            `json:"message"`
	First   *agent.Resolution `json:"first,omitempty"` // already resolved
}

// sentinels are the errors a caller matches, by their code on the wire.
var sentinels = []struct {
	code string
	err  error
}{
	{"not_found", sessions.ErrNotFound}, {"unknown_agent", sessions.ErrUnknownAgent}, {"ended", sessions.ErrEnded},
	{"shutting_down", sessions.ErrShuttingDown}, {"agent_start", sessions.ErrAgentStart},
	{"invalid_request", sessions.ErrInvalidRequest}, {"too_many_sessions", sessions.ErrTooManySessions},
	{"workspace", sessions.ErrWorkspace}, {"ahead", sessions.ErrAhead}, {"live", sessions.ErrLive},
	{"workspace_id", workspace.ErrInvalidID}, {"workspace_busy", workspace.ErrBusy},
	{"unsupported", agent.ErrUnsupported}, {"turn_in_progress", agent.ErrTurnInProgress}, {"no_turn", agent.ErrNoTurn},
	{"unknown_approval", agent.ErrUnknownApproval}, {"session_ended", agent.ErrSessionEnded},
	{"invalid_event", agent.ErrInvalidEvent}, {"invalid_options", agent.ErrInvalidOptions},
	{"bad_answer", agent.ErrBadAnswer}, {"history_elsewhere", agent.ErrHistoryElsewhere},
	{"runner_gone", sessions.ErrRunnerGone}, {"draining", sessions.ErrDraining},
	{"invalid_settings", agent.ErrInvalidSettings}, {"invalid_image", agent.ErrInvalidImage},
	{"invalid_mcp_server", agent.ErrInvalidMCPServer}, {codeNotOwner, errNotOwner},
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Message: err.Error()}
	var already *agent.AlreadyResolvedError
	if errors.As(err, &already) {
		w.Code, w.First = "already_resolved", &already.First
		return w
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			w.Code = s.code
			break
		}
	}
	return w
}

// remoteError is an owner's error as the asking runner sees it.
type remoteError struct {
	msg      string
	sentinel error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	if w.Code == "already_resolved" && w.First != nil {
		return &agent.AlreadyResolvedError{First: *w.First}
	}
	for _, s := range sentinels {
		if s.code == w.Code {
			return &remoteError{msg: w.Message, sentinel: s.err}
		}
	}
	return &remoteError{msg: w.Message}
}

// call sends req to the subject `to` names (a runner's, rpcSubject) and
// decodes its reply, trying again (the same request) while nobody answers
// or the runner is not the session's, until its time is up. `to` is asked
// again before each try, afresh after a runner said the session is not
// its own; while it knows no runner for the session, call waits
// interestWait for one (a session just created elsewhere) and then
// returns errNoOwner.
func (f *Fleet) call(ctx context.Context, to func(ctx context.Context, fresh bool) (string, error), req request) (reply, error) {
	timeout := rpcTimeout
	if req.Op == "create" {
		timeout = createTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req.ID = nuid.Next()
	data, err := json.Marshal(req)
	if err != nil {
		return reply{}, fmt.Errorf("fleet: %s: %w", req.Op, err)
	}
	var unknownSince time.Time
	fresh := false
	for {
		subject, err := to(ctx, fresh)
		fresh = false
		if err == nil {
			var r reply
			if r, err = f.request(ctx, subject, req.Op, data); err == nil {
				if r.Error == nil || r.Error.Code != codeNotOwner {
					return r, r.Error.err()
				}
				err = r.Error.err()
			}
			// Not there, or nobody there: it may have moved since this
			// runner's view of the registry, which the next try reads.
			fresh = errors.Is(err, errNotOwner) || errors.Is(err, nats.ErrNoResponders)
		}
		if errors.Is(err, errUnknownSession) {
			if unknownSince.IsZero() {
				unknownSince = time.Now()
			}
			if time.Since(unknownSince) > interestWait {
				return reply{}, errNoOwner
			}
		}
		retry := errors.Is(err, errUnknownSession) || errors.Is(err, errNotOwner) || errors.Is(err, errRouting) ||
			errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) ||
			errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrConnectionReconnecting)
		if !retry && ctx.Err() == nil {
			return reply{}, err
		}
		select {
		case <-ctx.Done():
			return reply{}, fmt.Errorf("%w: %s: %w", sessions.ErrRunnerGone, req.Op, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// request is one try of a call: its reply, decoded.
func (f *Fleet) request(ctx context.Context, subject, op string, data []byte) (reply, error) {
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	m, err := f.nc.RequestWithContext(actx, subject, data)
	if err != nil {
		return reply{}, fmt.Errorf("fleet: %s on %s: %w", op, subject, err)
	}
	var r reply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return reply{}, fmt.Errorf("fleet: %s on %s: a reply that does not decode: %w", op, subject, err)
	}
	return r, nil
}

// to is a call's fixed subject.
func to(subject string) func(context.Context, bool) (string, error) {
	return func(context.Context, bool) (string, error) { return subject, nil }
}

// answers runs each command once, however often it is asked, and keeps
// its answer a while for a caller that asks again.
type answers struct {
	mu   sync.Mutex
	byID map[string]*answer
}

type answer struct {
	done  chan struct{}
	reply []byte
	at    time.Time
}

// get is the answer for id: new says the caller is the first to ask and
// must run the command, then finish it.
func (a *answers) get(id string, now time.Time) (ans *answer, new bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID == nil {
		a.byID = map[string]*answer{}
	}
	for k, v := range a.byID {
		if !v.at.IsZero() && now.Sub(v.at) > repliesKept {
			delete(a.byID, k)
		}
	}
	if ans, ok := a.byID[id]; ok {
		return ans, false
	}
	ans = &answer{done: make(chan struct{})}
	a.byID[id] = ans
	return ans, true
}

func (a *answers) finish(ans *answer, reply []byte, now time.Time) {
	a.mu.Lock()
	ans.reply, ans.at = reply, now
	a.mu.Unlock()
	close(ans.done)
}

// errNoOwner: no runner owns the session, as far as the registry knows.
var errNoOwner = errors.New("fleet: no runner owns the session")

// errUnknownSession: the registry has no entry for a session (yet);
// errNotOwner: the runner a command went to does not own its session
// (any more); errRouting: the registry could not be read. A call tries
// again on each.
var (
	errUnknownSession = errors.New("fleet: the registry has no entry for the session")
	errNotOwner       = errors.New("fleet: the runner does not own the session")
	errRouting        = errors.New("fleet: the session's runner cannot be looked up")
)

// codeNotOwner is errNotOwner on the wire.
const codeNotOwner = "not_owner"

// ownerSubject is the subject of the runner that owns session id, as this
// runner's view of the registry says, or, when the view has no word of it
// or fresh asks, as the registry's bucket does.
func (c *Core) ownerSubject(ctx context.Context, id string, fresh bool) (string, error) {
	if s, ok := c.reg.session(id); ok && s.Runner != "" && !fresh {
		return rpcSubject(s.Runner), nil
	}
	s, err := c.entryOf(ctx, id)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		return "", fmt.Errorf("%w: %s", errUnknownSession, id)
	case err != nil:
		return "", fmt.Errorf("%w: %w", errRouting, err)
	case s.Runner == "":
		return "", fmt.Errorf("%w: %s has no runner", errUnknownSession, id)
	}
	c.reg.learn(s)
	return rpcSubject(s.Runner), nil
}

// serveRPC answers the commands other runners send this one, for itself
// and for its sessions, each on a goroutine of its own (a create waits for
// its agent), until ctx ends.
func (c *Core) serveRPC(ctx context.Context) (*nats.Subscription, error) {
	return c.f.nc.Subscribe(rpcSubject(c.f.cfg.Name), c.command(ctx))
}

// ceded says whether another runner took session id over from this one
// (after this runner was taken for lost): its commands are that runner's
// to answer, and its registry entry that runner's to write. Only a
// session that has ended here can be: this runner's view of the registry
// may lag behind its own take-over of a session, never the other way.
func (c *Core) ceded(id string) bool {
	info, err := c.local.Get(id)
	return err == nil && c.cededInfo(info)
}

// cededInfo is ceded for a session whose local record is at hand.
func (c *Core) cededInfo(info sessions.Info) bool {
	if info.State != sessions.StateEnded {
		return false
	}
	s, ok := c.reg.session(info.ID)
	return ok && s.Runner != "" && s.Runner != c.f.cfg.Name && s.Cause == ""
}

// respond answers m with r.
func respond(m *nats.Msg, r reply) {
	data, _ := json.Marshal(r)
	_ = m.Respond(data)
}

// command handles the messages of a command subject.
func (c *Core) command(ctx context.Context) nats.MsgHandler {
	return func(m *nats.Msg) {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			var req request
			if err := json.Unmarshal(m.Data, &req); err != nil || req.ID == "" {
				respond(m, reply{Error: &wireError{Code: "invalid_request",
					Message: fmt.Sprintf("fleet: a request that does not decode, or has no id: %v", err)}})
				return
			}
			if req.Session != "" && !c.isLocal(req.Session) {
				// Taken over by another runner, or never here: the caller
				// reads the registry again.
				respond(m, reply{Error: toWire(fmt.Errorf("%w: %s on %s", errNotOwner, req.Session, c.f.cfg.Name))})
				return
			}
			if req.Op == "pace" || req.Op == "unpace" {
				// Idempotent, and as frequent as a reader's progress: kept
				// out of the answers a retry finds.
				respond(m, c.handle(ctx, req))
				return
			}
			ans, first := c.answers.get(req.ID, time.Now())
			if first {
				data, err := json.Marshal(c.handle(ctx, req))
				if err != nil {
					data, _ = json.Marshal(reply{Error: &wireError{Message: err.Error()}})
				}
				c.answers.finish(ans, data, time.Now())
			}
			select {
			case <-ans.done:
				_ = m.Respond(ans.reply)
			case <-ctx.Done():
			}
		}()
	}
}

// handle runs one command on the local core.
func (c *Core) handle(ctx context.Context, req request) (r reply) {
	m := c.local
	var err error
	switch req.Op {
	case "create":
		if req.Create == nil {
			err = fmt.Errorf("%w: create without its request", sessions.ErrInvalidRequest)
			break
		}
		var info sessions.Info
		if info, err = c.createLocal(ctx, req.Create.toCore()); err == nil {
			r.Info = &info
		}
	case "reopen":
		var info sessions.Info
		if info, err = m.Reopen(ctx, req.Session, req.LastSeq, req.Relay); err == nil {
			info.Runner = c.f.cfg.Name
			r.Info = &info
		}
	case "get":
		var info sessions.Info
		if info, err = m.Get(req.Session); err == nil {
			info.Runner = c.f.cfg.Name
			r.Info = &info
		}
	case "prompt", "steer":
		if req.Prompt == nil {
			err = fmt.Errorf("%w: %s without a prompt", sessions.ErrInvalidRequest, req.Op)
		} else if req.Op == "prompt" {
			err = m.Prompt(ctx, req.Session, *req.Prompt)
		} else {
			err = m.Steer(ctx, req.Session, *req.Prompt)
		}
	case "configure":
		if req.Settings == nil {
			err = fmt.Errorf("%w: configure without settings", sessions.ErrInvalidRequest)
			break
		}
		var info sessions.Info
		if info, err = m.Configure(ctx, req.Session, *req.Settings); err == nil {
			info.Runner = c.f.cfg.Name
			r.Info = &info
		}
	case "interrupt":
		err = m.Interrupt(ctx, req.Session)
	case "close":
		err = m.Close(ctx, req.Session)
	case "input":
		err = m.Input(ctx, req.Session, req.N, req.Line)
	case "hold":
		err = c.holdFor(ctx, req)
	case "release":
		c.releaseFor(req.Hold, time.Now())
	case "pace":
		err = c.paceFor(req, time.Now())
	case "unpace":
		c.unpaceFor(req.Pace, time.Now())
	case "control":
		r.Raw, err = m.Control(ctx, req.Session, req.Subtype, req.Params)
	case "resolve":
		if req.Resolution == nil {
			err = fmt.Errorf("%w: resolve without a resolution", sessions.ErrInvalidRequest)
			break
		}
		var won agent.Resolution
		if won, err = m.Resolve(ctx, req.Session, *req.Resolution); err == nil {
			r.Resolution = &won
		}
	case "messages":
		r.Items, err = m.Messages(ctx, req.Session)
	case "diff":
		r.Changes, err = m.Diff(ctx, req.Session)
	case "drain":
		c.draining.Store(req.Drain)
		c.heartbeatNow()
	default:
		err = fmt.Errorf("%w: unknown command %q", sessions.ErrInvalidRequest, req.Op)
	}
	r.Error = toWire(err)
	return r
}

func fromCore(req sessions.CreateRequest) *createRequest {
	return &createRequest{Agent: req.Agent, WorkspaceID: req.WorkspaceID, Model: req.Model, Mode: req.Mode, Resume: req.Resume,
		Fork: req.Fork, Options: req.Options, Native: req.Native, Relay: req.Relay, MCPServers: req.MCPServers}
}

func (r *createRequest) toCore() sessions.CreateRequest {
	return sessions.CreateRequest{Agent: r.Agent, WorkspaceID: r.WorkspaceID, Model: r.Model, Mode: r.Mode, Resume: r.Resume,
		Fork: r.Fork, Options: r.Options, Native: r.Native, Relay: r.Relay, MCPServers: r.MCPServers}
}
