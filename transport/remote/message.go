package remote

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Bounds of the read buffer a connection keeps between messages. A buffer
// up to maxKeptMessageBuf is kept while messages keep coming: a runner
// catching up mixes large batches with small frames, and letting the
// buffer go at every small one made the next batch grow it again. It is
// let go once no message came for idleMessageBuf, so an idle connection
// holds none. A larger buffer (a huge single frame) goes with the next
// message that fits a small one. Buffers up to keepMessageBuf are simply
// kept.
const (
	keepMessageBuf    = 64 << 10
	maxKeptMessageBuf = 1 << 20
	idleMessageBuf    = time.Second
	minMessageBuf     = 512
)

// messageReader reads whole WebSocket messages into one buffer, reused
// from message to message: websocket.Conn.Read allocates every message
// anew and grows it from 512 bytes, copying a large batch several times.
type messageReader struct {
	buf []byte

	// While a read waits, a large buffer is parked here, and the idle
	// timer drops it; the read takes it back when a message comes.
	parked    atomic.Pointer[[]byte]
	idle      *time.Timer
	idleAfter time.Duration // idleMessageBuf unless a test sets it
	drops     atomic.Int64  // buffers the idle timer dropped
}

// read returns the next message, valid until the next read.
func (m *messageReader) read(ctx context.Context, ws *websocket.Conn) ([]byte, error) {
	m.park()
	_, r, err := ws.Reader(ctx)
	m.unpark()
	if err != nil {
		return nil, err
	}
	buf := m.buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(cap(buf), minMessageBuf))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	m.buf = buf
	if cap(buf) > maxKeptMessageBuf && len(buf) < keepMessageBuf/4 {
		m.buf = nil // small messages again: do not keep a huge frame's buffer
	}
	return buf, nil
}

// park hands a large buffer to the idle timer before a wait.
func (m *messageReader) park() {
	if cap(m.buf) <= keepMessageBuf {
		return
	}
	buf := m.buf[:0]
	m.buf = nil
	m.parked.Store(&buf)
	after := m.idleAfter
	if after == 0 {
		after = idleMessageBuf
	}
	if m.idle == nil {
		m.idle = time.AfterFunc(after, func() {
			if m.parked.Swap(nil) != nil {
				m.drops.Add(1)
			}
		})
	} else {
		m.idle.Reset(after)
	}
}

// unpark takes the parked buffer back, unless the idle timer dropped it.
func (m *messageReader) unpark() {
	if buf := m.parked.Swap(nil); buf != nil {
		m.buf = *buf
	}
}

// close stops the idle timer and drops the buffers.
func (m *messageReader) close() {
	if m.idle != nil {
		m.idle.Stop()
	}
	m.parked.Store(nil)
	m.buf = nil
}
