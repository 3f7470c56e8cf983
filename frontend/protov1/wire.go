package protov1

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// keepBuf is the largest buffer a connection or a pump keeps once it is
// idle; a larger one (for a replay, a burst of output) is dropped (see
// trimmed).
const keepBuf = 64 << 10

// gatherConn is the network connection under a host's WebSocket.
// coder/websocket sends every message at once, one write each; while
// gathering, what it writes collects here instead and leaves with the
// next write made without gathering, so a run of frames costs one write,
// not one per frame, and every frame is still its own WebSocket message.
type gatherConn struct {
	net.Conn
	gathering atomic.Bool

	mu  sync.Mutex // the WebSocket serialises its writes; this guards buf all the same
	buf []byte
}

// gather switches gathering on or off; the write that follows "off" sends
// what was gathered.
func (g *gatherConn) gather(on bool) {
	if g != nil {
		g.gathering.Store(on)
	}
}

// release stops gathering and sends what is left, which only happens when
// the write that should have taken it failed or never came (a close frame
// the WebSocket wrote meanwhile, say). ctx's deadline bounds the write.
func (g *gatherConn) release(ctx context.Context) error {
	if g == nil {
		return nil
	}
	g.gathering.Store(false)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.buf) == 0 {
		return nil
	}
	if d, ok := ctx.Deadline(); ok {
		_ = g.Conn.SetWriteDeadline(d)
		defer g.Conn.SetWriteDeadline(time.Time{})
	}
	return g.flushLocked(nil)
}

func (g *gatherConn) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.gathering.Load():
		g.buf = append(g.buf, p...)
		return len(p), nil
	case len(g.buf) == 0:
		return g.Conn.Write(p)
	}
	if err := g.flushLocked(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flushLocked sends the gathered bytes and p in one write.
func (g *gatherConn) flushLocked(p []byte) error {
	g.buf = append(g.buf, p...)
	_, err := g.Conn.Write(g.buf)
	g.buf = trimmed(g.buf)
	return err
}

// gatherWriter hands coder/websocket a gatherConn when it hijacks the
// connection.
type gatherWriter struct {
	http.ResponseWriter
	conn *gatherConn
}

func (w *gatherWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The server has sent the upgrade response; anything still buffered
	// goes out before the connection changes hands.
	if err := brw.Writer.Flush(); err != nil {
		c.Close()
		return nil, nil, err
	}
	w.conn = &gatherConn{Conn: c}
	brw.Writer.Reset(w.conn) // its buffer, now writing through the gatherConn
	return w.conn, brw, nil
}

func (w *gatherWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
