package remote

import (
	"context"
	"errors"
	"io"
	"slices"

	"github.com/coder/websocket"
)

// keepMessageBuf is the largest read buffer kept once messages are small
// again.
const keepMessageBuf = 64 << 10

// messageReader reads whole WebSocket messages into one buffer, reused
// from message to message: websocket.Conn.Read allocates every message
// anew and grows it from 512 bytes, copying a large batch several times.
type messageReader struct {
	buf []byte
}

// read returns the next message, valid until the next read.
func (m *messageReader) read(ctx context.Context, ws *websocket.Conn) ([]byte, error) {
	_, r, err := ws.Reader(ctx)
	if err != nil {
		return nil, err
	}
	buf := m.buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(cap(buf), 512))
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
	if cap(buf) > keepMessageBuf && len(buf) < keepMessageBuf/4 {
		m.buf = nil // small messages again: do not keep a replay's buffer
	}
	return buf, nil
}
