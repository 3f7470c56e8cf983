package remote

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/tetherhq/tether/transport"
)

// Defaults, as the sidecar protocol specifies them.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultInitTimeout    = 30 * time.Second
	DefaultReconnectFor   = 60 * time.Second
	DefaultPingInterval   = 10 * time.Second
)

// Transport connects to a runner.
type Transport struct {
	// URL is the runner's sessions endpoint, ws://host:port/sessions or
	// wss://…
	URL string
	// Token is sent as a bearer token.
	Token string
	// WorkspaceID names the workspace to work in.
	WorkspaceID string
	// SessionOpts are the agent's options, validated by the runner.
	SessionOpts json.RawMessage
	// Resume continues an earlier session of this workspace.
	Resume string

	ConnectTimeout time.Duration
	InitTimeout    time.Duration
	// ReconnectFor is how long to keep trying after the connection drops
	// (the runner keeps the session for its grace period, 60 s default).
	ReconnectFor time.Duration
	PingInterval time.Duration
	HTTPClient   *http.Client
	Logger       *slog.Logger
	// OnHealth is told about every change of health.
	OnHealth func(Health)
}

// Health of a remote connection.
type Health int

const (
	// Healthy: connected, pings answered.
	Healthy Health = iota
	// Degraded: a ping went unanswered or the connection dropped and a
	// reconnect is under way.
	Degraded
	// Unhealthy: disconnected for good.
	Unhealthy
)

func (h Health) String() string {
	return [...]string{"healthy", "degraded", "unhealthy"}[h]
}

// Connect opens the session and waits for the runner's ready.
func (t *Transport) Connect(ctx context.Context) (transport.Conn, error) {
	c := newConn(t)
	if err := c.open(ctx); err != nil {
		c.shutdown()
		return nil, err
	}
	return c, nil
}

func (t *Transport) logger() *slog.Logger {
	if t.Logger != nil {
		return t.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
