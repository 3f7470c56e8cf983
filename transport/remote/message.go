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

// A read buffer starts at minMessageBuf bytes and doubles. Once a message
// has outgrown keepMessageBuf/4 it is a large one, and the buffer jumps to
// the size the last large buffer had, up to maxJump: a runner's batches
// are at most a few hundred KiB, and a single huge frame should not make
// every later large message allocate as much.
const (
	minMessageBuf = 512
	maxJump       = 1 << 20
)

// messageReader reads whole WebSocket messages into one buffer, reused
// from message to message: websocket.Conn.Read allocates every message
// anew and grows it from 512 bytes, copying a large batch several times.
//
// A large buffer is dropped once a message is small again, so an idle
// connection does not hold it; its size is remembered, and the next
// large message gets that size at once. A runner
// catching up mixes large batches with small ones, and growing back by
// doubling every time cost more than the messages' own copies.
type messageReader struct {
	buf       []byte
	lastLarge int // capacity of the last large buffer dropped
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
			buf = slices.Grow(buf, m.growth(cap(buf)))
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
		m.buf, m.lastLarge = nil, cap(buf) // small messages again: do not keep a replay's buffer
	}
	return buf, nil
}

// growth is how many bytes to add to a full buffer of capacity c: double
// it, or jump to the size the last large buffer had.
func (m *messageReader) growth(c int) int {
	if jump := min(m.lastLarge, maxJump); c >= keepMessageBuf/4 && jump > c {
		return jump - c
	}
	return max(c, minMessageBuf)
}
