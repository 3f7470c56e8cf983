package codex

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/protocol/codexapp"
	"github.com/tetherhq/tether/transport"
)

// ErrAppServer matches an *AppServerError.
var ErrAppServer = errors.New("codex: app-server refused a request")

// AppServerError is the app-server's error answer to one of the driver's
// requests (an unknown thread, a steer of a turn that ended, …).
type AppServerError struct {
	Method string
	Err    *codexapp.RPCError
}

func (e *AppServerError) Error() string {
	return fmt.Sprintf("codex: %s: %s (code %d)", e.Method, e.Err.Message, e.Err.Code)
}

func (e *AppServerError) Is(target error) bool { return target == ErrAppServer }
func (e *AppServerError) Unwrap() error        { return e.Err }

// rpc is the client side of the app-server's JSON-RPC: requests with their
// pending answers. The session's reader hands it every response.
type rpc struct {
	conn   transport.Conn
	nextID atomic.Int64

	mu      sync.Mutex
	calls   map[codexapp.ID]chan *codexapp.Response
	stopped bool
}

func newRPC(conn transport.Conn) *rpc {
	return &rpc{conn: conn, calls: map[codexapp.ID]chan *codexapp.Response{}}
}

// call sends a request and waits for its answer, decoding a result into
// result (nil: ignore it). The answer never comes once the reader stopped:
// then the session has ended.
func (r *rpc) call(ctx context.Context, p codexapp.Params, result any) error {
	id := codexapp.IntID(r.nextID.Add(1))
	line, err := codexapp.EncodeCall(id, p)
	if err != nil {
		return err
	}
	answer := make(chan *codexapp.Response, 1)
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return agent.ErrSessionEnded
	}
	r.calls[id] = answer
	r.mu.Unlock()
	defer r.forget(id)
	if err := r.conn.Write(ctx, line); err != nil {
		return fmt.Errorf("codex: %s: %w", p.Method(), err)
	}
	select {
	case resp := <-answer:
		if resp == nil {
			return fmt.Errorf("codex: %s: %w", p.Method(), agent.ErrSessionEnded)
		}
		if resp.Error != nil {
			return &AppServerError{Method: p.Method(), Err: resp.Error}
		}
		if result == nil {
			return nil
		}
		if err := resp.DecodeResult(result); err != nil {
			return fmt.Errorf("codex: %s: %w", p.Method(), err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("codex: %s: %w", p.Method(), ctx.Err())
	}
}

// notify sends a notification.
func (r *rpc) notify(ctx context.Context, method string, params any) error {
	line, err := codexapp.EncodeNotification(method, params)
	if err != nil {
		return err
	}
	return r.conn.Write(ctx, line)
}

// answer sends the result of a server request.
func (r *rpc) answer(ctx context.Context, id codexapp.ID, result any) error {
	line, err := codexapp.EncodeResult(id, result)
	if err != nil {
		return err
	}
	return r.conn.Write(ctx, line)
}

// refuse sends an error answer to a server request.
func (r *rpc) refuse(ctx context.Context, id codexapp.ID, code int64, msg string) error {
	line, err := codexapp.EncodeError(id, &codexapp.RPCError{Code: code, Message: msg})
	if err != nil {
		return err
	}
	return r.conn.Write(ctx, line)
}

func (r *rpc) forget(id codexapp.ID) {
	r.mu.Lock()
	delete(r.calls, id)
	r.mu.Unlock()
}

// deliver hands a response to its call; one nobody waits for is dropped.
func (r *rpc) deliver(resp *codexapp.Response) {
	r.mu.Lock()
	answer, ok := r.calls[resp.ID]
	delete(r.calls, resp.ID)
	r.mu.Unlock()
	if ok {
		answer <- resp // buffered 1, sent once
	}
}

// stop wakes every waiting call with no answer: the reader has ended.
func (r *rpc) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	for id, answer := range r.calls {
		delete(r.calls, id)
		close(answer)
	}
}
