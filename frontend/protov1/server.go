package protov1

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/runner/sessions"
)

// Defaults for Server.
const (
	DefaultMaxFrameSize = 16 << 20
	DefaultPingInterval = 15 * time.Second
	DefaultInitTimeout  = 30 * time.Second
	DefaultGracePeriod  = 60 * time.Second
)

// agentKind is the agent protocol v1 drives: its wire is Claude Code's.
const agentKind = "claude"

// Server serves protocol v1. Authentication happens before it (see
// runner/auth.Middleware): by the time a request reaches ServeHTTP it is
// allowed.
type Server struct {
	Sessions sessions.Core
	// MaxFrameSize caps one host frame (default 16 MiB).
	MaxFrameSize int64
	// PingInterval is how often the runner pings a quiet host.
	PingInterval time.Duration
	// InitTimeout bounds the wait for the first frame.
	InitTimeout time.Duration
	// GracePeriod is how long a session outlives its last connection
	// before it is closed (default 60 s).
	GracePeriod time.Duration
	Logger      *slog.Logger

	mu    sync.Mutex
	hosts map[string]*hostState // by session id, while a session is followed or in its grace
}

// hostState is what protocol v1 keeps of a session for its hosts: who is
// attached (the grace timer runs while nobody is), the input frames
// applied, and the query running.
type hostState struct {
	mu       sync.Mutex
	attached int
	grace    *time.Timer
	// lastInput is the last numbered input frame applied.
	lastInput uint64
	// query is the request id of the last query sent.
	query string
}

// host is the state of session id, made on first use.
func (s *Server) host(id string) *hostState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hosts == nil {
		s.hosts = map[string]*hostState{}
	}
	h, ok := s.hosts[id]
	if !ok {
		h = &hostState{}
		s.hosts[id] = h
	}
	return h
}

// fresh gives session id new state: its agent has just started (a new
// session, or one started again), and knows none of the input frames an
// earlier agent was given.
func (s *Server) fresh(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.hosts[id]; ok {
		h.mu.Lock()
		if h.grace != nil {
			h.grace.Stop()
		}
		h.mu.Unlock()
	}
	if s.hosts == nil {
		s.hosts = map[string]*hostState{}
	}
	s.hosts[id] = &hostState{}
}

// attach marks a connection as following session id: its grace timer
// stops. detach starts it again once nobody follows the session; when it
// fires, the session is closed.
func (s *Server) attach(id string) (detach func()) {
	h := s.host(id)
	h.mu.Lock()
	h.attached++
	if h.grace != nil {
		h.grace.Stop()
	}
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.attached--
			if h.attached > 0 {
				return
			}
			if h.grace == nil {
				h.grace = time.AfterFunc(s.gracePeriod(), func() { s.graceExpired(id, h) })
			} else {
				h.grace.Reset(s.gracePeriod())
			}
		})
	}
}

// Close stops every grace timer (the runner is stopping, and ends every
// session itself).
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, h := range s.hosts {
		h.mu.Lock()
		if h.grace != nil {
			h.grace.Stop()
		}
		h.mu.Unlock()
		delete(s.hosts, id)
	}
}

// graceExpired closes a session nobody came back to, and forgets it.
func (s *Server) graceExpired(id string, h *hostState) {
	h.mu.Lock()
	attached := h.attached
	h.mu.Unlock()
	if attached > 0 {
		return
	}
	s.forget(id, h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Sessions.Close(ctx, id); err != nil && !errors.Is(err, sessions.ErrNotFound) {
		s.logger().Warn("session not closed after its grace period", "session", id, "err", err)
		return
	}
	s.logger().Info("session closed: no host attached within the grace period", "session", id)
}

// forget drops a session's state when it is h (a reopened session under
// the same id has fresh state).
func (s *Server) forget(id string, h *hostState) {
	s.mu.Lock()
	if s.hosts[id] == h {
		delete(s.hosts, id)
	}
	s.mu.Unlock()
}

// claimInput reports whether input frame n is new, and records it; frames
// without a number are always new.
func (h *hostState) claimInput(n uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n == 0 {
		return true
	}
	if n <= h.lastInput {
		return false
	}
	h.lastInput = n
	return true
}

func (h *hostState) inputSeq() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastInput
}

func (h *hostState) setQuery(id string) {
	h.mu.Lock()
	h.query = id
	h.mu.Unlock()
}

func (h *hostState) lastQuery() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.query
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (s *Server) maxFrame() int64 {
	if s.MaxFrameSize > 0 {
		return s.MaxFrameSize
	}
	return DefaultMaxFrameSize
}

func (s *Server) gracePeriod() time.Duration {
	if s.GracePeriod > 0 {
		return s.GracePeriod
	}
	return DefaultGracePeriod
}

// ServeHTTP upgrades to WebSocket and runs one connection.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gw := &gatherWriter{ResponseWriter: w}
	ws, err := websocket.Accept(gw, r, nil)
	if err != nil {
		return // Accept has answered the request
	}
	// A frame over the cap is refused with an error frame; only a frame
	// far over it (4×) closes the connection, so reading it whole stays
	// bounded.
	ws.SetReadLimit(4*s.maxFrame() + 1024)
	c := &conn{srv: s, ws: ws, wire: gw.conn, log: s.logger().With("remote", r.RemoteAddr)}
	c.run(r.Context())
}

// closeStatus picks the close code for how a connection ended.
func closeStatus(err error) (websocket.StatusCode, string) {
	switch {
	case err == nil:
		return websocket.StatusNormalClosure, ""
	case errors.Is(err, context.Canceled):
		return websocket.StatusGoingAway, "runner stopping"
	default:
		return websocket.StatusPolicyViolation, err.Error()
	}
}
