package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"

	"github.com/coder/websocket"
)

// Bounds of messageReader's guess at the next message's size.
const (
	minMessageBuf = 512
	maxMessageBuf = 1 << 20
)

// messageReader reads whole WebSocket messages into a buffer sized from
// the last message. websocket.Conn.Read grows its buffer from 512 bytes,
// copying a large batch several times over.
type messageReader struct {
	hint int
}

func (m *messageReader) read(ctx context.Context, ws *websocket.Conn) ([]byte, error) {
	_, r, err := ws.Reader(ctx)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 0, max(m.hint, minMessageBuf))
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
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
	m.hint = min(len(buf)+len(buf)/4, maxMessageBuf)
	if cap(buf) > 2*len(buf)+minMessageBuf {
		// The lines handed on alias the buffer: do not let a small message
		// keep a large one alive.
		buf = bytes.Clone(buf)
	}
	return buf, nil
}
