package protov1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	v1 "github.com/tetherhq/tether/protocol/runnerv1"
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
	group := []frame{
		{seq: 1, data: []byte(`{"type":"message","request_id":"q","payload":"a"}`)},
		{seq: 2, data: []byte(`{"type":"message","request_id":"q","payload":"b"}`)},
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

// A writer that is behind (its group was cut at the bounds) keeps its
// batch buffer for the next group; one that caught up lets a large one
// go. Every frame reaches the host either way.
func TestWriterKeepsItsBufferWhileBehind(t *testing.T) {
	payload := func(seq uint64) []byte {
		return []byte(`{"type":"message","request_id":"q","message":{"type":"assistant","n":` + strconv.FormatUint(seq, 10) + `,"pad":"` + strings.Repeat("x", 400) + `"}}`)
	}
	group := func(first uint64, n int) []frame {
		g := make([]frame, n)
		for i := range g {
			g[i] = frame{seq: first + uint64(i), data: payload(first + uint64(i))}
		}
		return g
	}
	groups := [][]frame{group(1, groupFrames), group(1+groupFrames, 3)}
	var caps []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gw := &gatherWriter{ResponseWriter: w}
		ws, err := websocket.Accept(gw, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		c := &conn{ws: ws, wire: gw.conn, batch: true, batchBytes: minBatchBytes} // a new connection: its batches grow
		for _, g := range groups {
			if err := c.writeGroup(r.Context(), g); err != nil {
				t.Error(err)
				return
			}
			caps = append(caps, cap(c.buf))
		}
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(-1)
	next := uint64(1)
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatal(err)
			}
			break
		}
		seq, items, ok := v1.SplitBatch(data, nil)
		if !ok {
			f, err := v1.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			seq, items = v1.FrameSeq(f), [][]byte{data}
		}
		for i, item := range items {
			if s := seq + uint64(i); s != next || !bytes.Contains(item, []byte(`"n":`+strconv.FormatUint(s, 10)+`,`)) {
				t.Fatalf("frame %d: %.60s, want frame %d", s, item, next)
			}
			next++
		}
	}
	if want := uint64(groupFrames + 3 + 1); next != want {
		t.Errorf("host got frames up to %d, want %d", next-1, want-1)
	}
	if len(caps) != 2 || caps[0] < keepBuf || caps[1] > keepBuf {
		t.Errorf("buffer capacity after a full group, then a small one: %v; want kept (> %d), then let go", caps, keepBuf)
	}
}
