package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	"github.com/tetherhq/tether/protocol/ndjson"
)

// Memory is an in-process Transport for tests: Connect yields one end of a
// pipe and Agent is the other end, which the test drives as the agent.
// Lines are handed over one at a time, so a slow reader slows the writer
// exactly as a real pipe would. The zero value is ready to use.
type Memory struct {
	init          sync.Once
	client, agent *memConn
	connect       sync.Once
}

// NewMemory returns a connected pair.
func NewMemory() *Memory { return new(Memory) }

func (m *Memory) ends() (client, agent *memConn) {
	m.init.Do(func() { m.client, m.agent = newMemPipe() })
	return m.client, m.agent
}

// Connect returns the client end; a second Connect fails.
func (m *Memory) Connect(ctx context.Context) (Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ok := false
	m.connect.Do(func() { ok = true })
	if !ok {
		return nil, errors.New("transport: memory transport already connected")
	}
	client, _ := m.ends()
	return client, nil
}

// Agent returns the agent's end.
func (m *Memory) Agent() Conn {
	_, agent := m.ends()
	return agent
}

type memDir struct {
	lines     chan []byte
	closed    chan struct{} // writer will send no more
	closeOnce sync.Once
}

func newMemDir() *memDir {
	return &memDir{lines: make(chan []byte), closed: make(chan struct{})}
}

func (d *memDir) close() { d.closeOnce.Do(func() { close(d.closed) }) }

type memConn struct {
	in, out *memDir
	done    chan struct{} // this end closed
	peer    *memConn
	once    sync.Once
}

func newMemPipe() (*memConn, *memConn) {
	ab, ba := newMemDir(), newMemDir()
	a := &memConn{in: ba, out: ab, done: make(chan struct{})}
	b := &memConn{in: ab, out: ba, done: make(chan struct{})}
	a.peer, b.peer = b, a
	return a, b
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (c *memConn) Read(ctx context.Context) ([]byte, error) {
	// Checked first because select picks at random among ready cases:
	// after Close, Read must say ErrClosed, not sometimes io.EOF.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if isDone(c.done) {
		return nil, ErrClosed
	}
	select {
	case line := <-c.in.lines:
		return line, nil
	case <-c.in.closed:
		if isDone(c.done) {
			return nil, ErrClosed
		}
		return nil, io.EOF
	case <-c.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *memConn) Write(ctx context.Context, line []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if bytes.IndexByte(line, '\n') >= 0 {
		return ndjson.ErrNewlineInLine // as Command does
	}
	if isDone(c.done) || isDone(c.out.closed) || isDone(c.peer.done) {
		return ErrClosed
	}
	owned := append([]byte(nil), line...)
	select {
	case c.out.lines <- owned:
		return nil
	case <-c.out.closed:
		return ErrClosed
	case <-c.done:
		return ErrClosed
	case <-c.peer.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *memConn) CloseWrite() error {
	c.out.close()
	return nil
}

func (c *memConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.out.close()
		c.in.close()
	})
	return nil
}
