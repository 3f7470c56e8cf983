package protov1

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/internal/safe"
	v1 "github.com/tetherhq/tether/protocol/runnerv1"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/runner/sessions"
)

// conn is one host connection: at most one session.
type conn struct {
	srv  *Server
	ws   *websocket.Conn
	wire *gatherConn // under ws
	log  *slog.Logger
	// relay: the host speaks the control protocol (host_control), and
	// reads the CLI's lines embedded as they are; batch: it reads batch
	// frames (it asked, in a host-control init); batchBytes bounds the
	// next one (see writeMessages).
	relay      bool
	batch      bool
	batchBytes int

	// The writer's buffers, reused from one message to the next.
	buf   []byte
	items [][]byte
	// answers counts the goroutines answering control frames.
	answers sync.WaitGroup
	// query is the request id of the last query this connection sent
	// (the read loop's own).
	query string
}

func (c *conn) run(request context.Context) {
	defer c.ws.CloseNow()
	// The connection reads and writes under ctx, which the request's end
	// does not cut by itself: a cancelled read drops the WebSocket at
	// once, with no close frame to say why. A request that ends for a
	// cause of its own (a revoked token) closes the connection saying so;
	// one merely cancelled (the runner stopping) ends the wait for init,
	// but not a session's connection, whose clean close the session's end
	// starts.
	ctx, cancel := context.WithCancel(context.WithoutCancel(request))
	defer cancel()
	var opened atomic.Bool
	defer context.AfterFunc(request, func() {
		if !c.closeForCause(request) && !opened.Load() {
			cancel()
		}
	})()
	init, err := c.awaitInit(ctx)
	if err != nil {
		c.refuse(ctx, err)
		return
	}
	info, resumed, after, err := c.openApart(ctx, init)
	if err != nil {
		c.refuse(ctx, err)
		return
	}
	opened.Store(true)
	id := info.ID
	// A relay session's lines are embedded as they are, whoever reads
	// them; batches are an extension of relay sessions, for hosts that
	// speak it and ask.
	c.relay = info.Relay
	c.batch = info.Relay && init.HostControl && init.Batch
	c.batchBytes = minBatchBytes
	c.log = c.log.With("session", id)
	c.logOpened(request, info, resumed)
	if release, err := c.srv.Sessions.Hold(ctx, id, c.srv.gracePeriod()); err != nil {
		// The session goes on; only its end after the host's is lost.
		c.log.Warn("protocol v1: the session is not held for its host", "err", err)
	} else {
		defer release()
	}
	if resumed {
		if err := c.sendReady(ctx, info); err != nil {
			return
		}
	}
	defer c.startPing(ctx)()
	defer c.answers.Wait()
	written := make(chan error, 1)
	go func() {
		defer safe.Recover(c.log, "protocol v1 writer", func(p *safe.PanicError) { written <- p })
		err := c.writeEvents(ctx, id, after)
		if errors.Is(err, errSessionOver) {
			// Everything is sent: close cleanly, which also ends the read.
			// A session ended by the runner's shutdown is not over for
			// the host: "going away" tells it to come back and resume.
			code, reason := websocket.StatusNormalClosure, "session ended"
			if c.srv.Sessions.ShuttingDown() {
				code, reason = websocket.StatusGoingAway, "runner shutting down"
			}
			_ = c.ws.Close(code, reason)
		} else if err != nil && ctx.Err() == nil {
			// The host can be sent nothing more (its events cannot be
			// read, say): closing tells it so; it would wait for frames
			// that never come.
			c.log.Warn("protocol v1: the session's events could not be sent", "err", err)
			_ = c.ws.Close(websocket.StatusInternalError, "the session's events could not be sent")
		}
		written <- err
	}()
	readErr := c.readFrames(ctx, id)
	var writeErr error
	if errors.Is(readErr, errSessionOver) {
		// The host said stop: let the last frames drain first.
		select {
		case writeErr = <-written:
		case <-time.After(10 * time.Second):
			cancel()
			writeErr = <-written
		}
	} else {
		cancel()
		writeErr = <-written
	}
	c.close(readErr, writeErr)
}

// openApart is open on a goroutine of its own. A session's start runs
// deep (the driver, the agent's process, the workspace) and grows the
// stack it runs on, which Go gives back only slowly; the connection's
// reader lives as long as the session, idle most of that time, and keeps
// a small stack this way.
func (c *conn) openApart(ctx context.Context, init v1.Init) (sessions.Info, bool, uint64, error) {
	type opened struct {
		info    sessions.Info
		resumed bool
		after   uint64
		err     error
	}
	done := make(chan opened, 1)
	go func() {
		defer safe.Recover(c.log, "protocol v1 open", func(p *safe.PanicError) { done <- opened{err: p} })
		info, resumed, after, err := c.open(ctx, init)
		done <- opened{info, resumed, after, err}
	}()
	o := <-done
	return o.info, o.resumed, o.after, o.err
}

// logOpened logs a host's session: which workspace, and which token by
// its id (auth.IDFromContext), never the token.
func (c *conn) logOpened(ctx context.Context, info sessions.Info, resumed bool) {
	token, _ := auth.IDFromContext(ctx)
	msg := "session started"
	if resumed {
		msg = "session resumed"
	}
	c.log.Info(msg, "session", info.ID, "workspace", info.WorkspaceID, "token", token)
}

// close ends the connection the way it ended: normally after stop or the
// session's end, otherwise as the error says.
func (c *conn) close(readErr, writeErr error) {
	err := writeErr
	if errors.Is(err, errSessionOver) || err == nil {
		err = nil
	}
	if readErr != nil && !errors.Is(readErr, errSessionOver) && !isClosed(readErr) {
		err = readErr
	}
	code, reason := closeStatus(err)
	_ = c.ws.Close(code, reason)
}

var errSessionOver = errors.New("session over")

func isClosed(err error) bool {
	return websocket.CloseStatus(err) != -1 || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled)
}

// awaitInit reads frames until init, answering anything else with an error.
func (c *conn) awaitInit(ctx context.Context) (v1.Init, error) {
	timeout := c.srv.InitTimeout
	if timeout <= 0 {
		timeout = DefaultInitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		frame, err := c.readFrame(ctx)
		if err != nil {
			var fe *v1.FrameError
			if errors.As(err, &fe) && fe.Code != v1.CodeUnsupportedVersion {
				c.sendError(ctx, "", fe.Code, fe.Details)
				continue
			}
			return v1.Init{}, err
		}
		if init, ok := frame.(v1.Init); ok {
			return init, nil
		}
		c.sendError(ctx, requestIDOf(frame), v1.CodeNotInitialized, "the first frame must be init")
	}
}

// refuse tells the host why it gets no session, then closes.
func (c *conn) refuse(ctx context.Context, err error) {
	code, details := codeFor(err)
	if code == "" {
		return // the connection itself failed
	}
	c.sendError(ctx, "", code, details)
	_ = c.ws.Close(websocket.StatusPolicyViolation, code)
}

// readFrame reads one frame, refusing (without closing) one over the cap.
func (c *conn) readFrame(ctx context.Context) (v1.Frame, error) {
	typ, r, err := c.ws.Reader(ctx)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, c.srv.maxFrame()+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > c.srv.maxFrame() {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil, err
		}
		return nil, &v1.FrameError{Code: v1.CodeFrameTooLarge, Details: "frame exceeds the runner's limit"}
	}
	if typ != websocket.MessageText {
		return nil, &v1.FrameError{Code: v1.CodeInvalidFrame, Details: "frames are JSON text"}
	}
	return v1.Decode(data)
}

func (c *conn) sendError(ctx context.Context, requestID, code, details string) {
	frame, _ := v1.Encode(v1.Error{RequestID: requestID, Code: code, Details: details})
	_ = c.write(ctx, frame)
}

func (c *conn) write(ctx context.Context, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, frame)
}

func (c *conn) sendReady(ctx context.Context, info sessions.Info) error {
	frame, _ := v1.Encode(v1.Ready{Seq: info.LastSeq, SessionID: info.ID, Resumed: true, InputSeq: info.InputSeq})
	return c.write(ctx, frame)
}

// startPing keeps the connection alive and detects a dead peer: it pings
// the host every PingInterval until the returned stop is called, from a
// timer rather than a goroutine of its own, so an idle connection holds
// no stack for it. stop returns once no ping is under way.
func (c *conn) startPing(ctx context.Context) (stop func()) {
	every := c.srv.PingInterval
	if every <= 0 {
		every = DefaultPingInterval
	}
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu      sync.Mutex
		stopped bool
		running sync.WaitGroup
		timer   *time.Timer
	)
	ping := func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		running.Add(1)
		mu.Unlock()
		defer running.Done()
		pctx, cancelPing := context.WithTimeout(ctx, every)
		err := c.ws.Ping(pctx)
		cancelPing()
		if err != nil {
			if ctx.Err() == nil {
				c.log.Info("host did not answer ping; dropping connection", "err", err)
				_ = c.ws.CloseNow()
			}
			return
		}
		mu.Lock()
		if !stopped {
			timer.Reset(every)
		}
		mu.Unlock()
	}
	mu.Lock()
	timer = time.AfterFunc(every, ping)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
		cancel()
		running.Wait()
	}
}

// closeForCause closes the connection when its request ended for a reason
// of its own, not the plain cancellation of the runner stopping (which the
// session's end answers with a clean close): the token it authenticated
// with was revoked, say. The host is told why; its session stays, to be
// resumed with a token that is good. It reports whether it closed.
func (c *conn) closeForCause(request context.Context) bool {
	cause := context.Cause(request)
	if cause == nil || errors.Is(cause, context.Canceled) {
		return false
	}
	c.log.Info("connection closed", "reason", cause)
	_ = c.ws.Close(websocket.StatusPolicyViolation, cause.Error())
	return true
}
