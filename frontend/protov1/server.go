package protov1

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
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
	// before it is closed (default 60 s). The core keeps the session's
	// holds and its grace (sessions.Core.Hold), so a host that comes
	// back through another runner of a fleet finds its session.
	GracePeriod time.Duration
	Logger      *slog.Logger
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
