package protov1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/runner/eventlog"
)

// stallConn is a host that stops reading: after the upgrade response,
// every write blocks until the connection is closed.
type stallConn struct {
	net.Conn  // nil: only what a WebSocket uses is here
	blocked   chan struct{}
	closed    chan struct{}
	blockOnce sync.Once
	closeOnce sync.Once
}

func newStallConn() *stallConn {
	return &stallConn{blocked: make(chan struct{}), closed: make(chan struct{})}
}

func (s *stallConn) Read([]byte) (int, error) { <-s.closed; return 0, net.ErrClosed }

func (s *stallConn) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("HTTP/1.1 101")) {
		return len(p), nil
	}
	s.blockOnce.Do(func() { close(s.blocked) })
	<-s.closed
	return 0, net.ErrClosed
}

func (s *stallConn) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

func (s *stallConn) SetDeadline(time.Time) error      { return nil }
func (s *stallConn) SetReadDeadline(time.Time) error  { return nil }
func (s *stallConn) SetWriteDeadline(time.Time) error { return nil }
func (s *stallConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (s *stallConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }

// hijackable is a response writer whose connection is a stallConn.
type hijackable struct {
	http.ResponseWriter
	conn *stallConn
}

func (h *hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return h.conn, bufio.NewReadWriter(bufio.NewReader(h.conn), bufio.NewWriter(h.conn)), nil
}

// A group blocked on a host that stops reading ends, with ctx's error,
// when ctx ends: the writer's one watch of ctx closes the connection.
func TestWriteGroupEndsWithItsContext(t *testing.T) {
	stall := newStallConn()
	gw := &gatherWriter{ResponseWriter: &hijackable{ResponseWriter: httptest.NewRecorder(), conn: stall}}
	r := httptest.NewRequest(http.MethodGet, "/sessions", nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	ws, err := websocket.Accept(gw, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	c := &conn{ws: ws, wire: gw.conn, batchBytes: minBatchBytes}
	group := []eventlog.Event{
		{Seq: 1, Payload: []byte(`{"type":"message","request_id":"q","payload":"a"}`)},
		{Seq: 2, Payload: []byte(`{"type":"message","request_id":"q","payload":"b"}`)},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.writeGroup(ctx, group) }()
	<-stall.blocked
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("writeGroup = %v, want context.Canceled", err)
	}
	select {
	case <-stall.closed:
	default:
		t.Fatal("the connection is still open")
	}
}
