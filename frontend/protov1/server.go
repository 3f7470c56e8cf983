package protov1

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/runner"
)

// Defaults for Server.
const (
	DefaultMaxFrameSize = 16 << 20
	DefaultPingInterval = 15 * time.Second
	DefaultInitTimeout  = 30 * time.Second
)

// Server serves protocol v1. Authentication happens before it (see
// runner/auth.Middleware): by the time a request reaches ServeHTTP it is
// allowed.
type Server struct {
	Runner *runner.Runner
	// MaxFrameSize caps one host frame (default 16 MiB).
	MaxFrameSize int64
	// PingInterval is how often the runner pings a quiet host.
	PingInterval time.Duration
	// InitTimeout bounds the wait for the first frame.
	InitTimeout time.Duration
	Logger      *slog.Logger

	turnsMu sync.Mutex
	// turns is the request in progress per session: per Session, not per
	// id, since a session restarted under its id must not share (or lose
	// to the old pump's forget) the state of its predecessor.
	turns map[*runner.Session]*turnState
}

// turnState remembers which query a session's output belongs to.
type turnState struct {
	mu        sync.Mutex
	requestID string
	// open: a query's turn runs; the next query waits for its done frame
	// (the request id labels every frame until then).
	open bool
	// relay sessions get the agent's JSON lines embedded as is, and may
	// send batch frames. Set before the pump starts; read it elsewhere
	// with isRelay.
	relay bool
	// lastInput is the last numbered input frame applied.
	lastInput uint64
}

// claimInput reports whether input frame n is new, and records it; frames
// without a number are always new.
func (t *turnState) claimInput(n uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n == 0 {
		return true
	}
	if n <= t.lastInput {
		return false
	}
	t.lastInput = n
	return true
}

func (t *turnState) inputSeq() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastInput
}

func (t *turnState) setRelay(relay bool) {
	t.mu.Lock()
	t.relay = relay
	t.mu.Unlock()
}

func (t *turnState) isRelay() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.relay
}

// begin opens a query's turn, unless one is open: it returns the request
// id of that one and false.
func (t *turnState) begin(id string) (running string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open {
		return t.requestID, false
	}
	t.requestID, t.open = id, true
	return "", true
}

// end closes the open turn, if any.
func (t *turnState) end() {
	t.mu.Lock()
	t.open = false
	t.mu.Unlock()
}

func (t *turnState) get() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.requestID
}

func (s *Server) turn(sess *runner.Session) *turnState {
	s.turnsMu.Lock()
	defer s.turnsMu.Unlock()
	if s.turns == nil {
		s.turns = map[*runner.Session]*turnState{}
	}
	t, ok := s.turns[sess]
	if !ok {
		t = &turnState{}
		s.turns[sess] = t
	}
	return t
}

// turnOf is the session's state without creating it: a session whose
// pump is gone gets a throwaway one (nothing reads it any more).
func (s *Server) turnOf(sess *runner.Session) *turnState {
	s.turnsMu.Lock()
	defer s.turnsMu.Unlock()
	if t, ok := s.turns[sess]; ok {
		return t
	}
	return &turnState{}
}

func (s *Server) forget(sess *runner.Session) {
	s.turnsMu.Lock()
	delete(s.turns, sess)
	s.turnsMu.Unlock()
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
