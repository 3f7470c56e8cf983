package sessionsapi

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"
)

type connKey struct{}

// ConnContext is for http.Server.ConnContext: it lets an event stream see
// its connection, so that a reader that stopped reading is dropped (see
// stallWatch). A server without it drops such a reader only once a write
// blocks for two heartbeats.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

func connFrom(ctx context.Context) net.Conn {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	if t, ok := c.(*tls.Conn); ok {
		return t.NetConn()
	}
	return c
}

// errStalled is why a stream whose reader stopped reading was dropped.
var errStalled = errors.New("the peer acknowledged nothing queued to it for two heartbeats")

// dropConn ends a connection at once, what it has queued discarded (a
// reset, not a close that waits for a reader that does not read).
func dropConn(c net.Conn) {
	if c == nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// stallWatch tells a stream whose reader has stopped reading: what the
// stream sent sits in the connection's send queue and the peer has
// acknowledged nothing more for a whole window. A WebSocket stream finds
// the same reader by its unanswered ping; an SSE stream has no ping, so it
// looks at the socket. A reader that reads slowly makes progress and
// stays.
type stallWatch struct {
	conn      net.Conn
	window    time.Duration
	acked     uint64    // what the peer had acknowledged at the last progress
	progress  time.Time // when it last made progress, or had nothing queued
	supported bool
}

func newStallWatch(conn net.Conn, window time.Duration, now time.Time) *stallWatch {
	w := &stallWatch{conn: conn, window: window, progress: now}
	if conn != nil {
		w.acked, _, w.supported = sendProgress(conn)
	}
	return w
}

// stalled says, at time now, whether the reader has kept data queued
// without acknowledging any of it for the whole window.
func (w *stallWatch) stalled(now time.Time) bool {
	if !w.supported {
		return false
	}
	acked, queued, ok := sendProgress(w.conn)
	if !ok {
		return false
	}
	if queued == 0 || acked != w.acked {
		w.acked, w.progress = acked, now
		return false
	}
	return now.Sub(w.progress) >= w.window
}
