package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	cc "github.com/tetherhq/tether/protocol/claudecode"
	v1 "github.com/tetherhq/tether/protocol/runnerv1"
	"github.com/tetherhq/tether/transport"
)

// maxFrame bounds one frame from the runner: a line at the CLI's 64 MiB
// cap, escaped.
const maxFrame = 160 << 20

type conn struct {
	t *Transport

	ctx    context.Context // background work; ends on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// lines carries the agent's lines to Read, a WebSocket message's worth
	// at a time: out gathers them (loop goroutine), pending holds those
	// Read has yet to return (Read's caller).
	lines   chan [][]byte
	out     [][]byte
	pending [][]byte
	items   [][]byte // a batch's frames (loop goroutine)

	mu        sync.Mutex
	ws        *websocket.Conn
	connected chan struct{} // closed while ws is usable; replaced on loss
	sessionID string
	lastSeq   atomic.Uint64
	health    atomic.Int32

	// handshake is the first line written; agentStarts counts fresh
	// readies (loop goroutine only): from the second on, the runner has
	// restarted the agent and the handshake is sent again.
	handshakeOnce sync.Once
	handshake     []byte
	agentStarts   int

	// openTurns counts user lines written without a turn ended since
	// (the runner's done frame follows every result line): the turns an
	// agent restart cuts short (see endLostTurns).
	openTurns atomic.Int64

	// Input frames are numbered; the ones a resumed ready does not cover
	// are sent again (under mu).
	inputN       uint64
	unacked      []sentInput
	unackedBytes int

	done      chan struct{} // closed on the terminal error or Close
	termErr   error
	doneOnce  sync.Once
	closeOnce sync.Once
}

func newConn(t *Transport) *conn {
	c := &conn{t: t, lines: make(chan [][]byte), connected: make(chan struct{}), done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// open makes the first connection and starts the background loop.
func (c *conn) open(ctx context.Context) error {
	ws, first, err := c.dial(ctx, c.t.Resume)
	if err != nil {
		return err
	}
	c.attach(ws)
	c.wg.Add(1)
	go c.loop(ws, first)
	return nil
}

// dial connects, sends init and waits for the session to answer; first is
// the answer (see awaitReady), for the loop to handle before anything else.
func (c *conn) dial(ctx context.Context, resume string) (*websocket.Conn, v1.Frame, error) {
	dctx, cancel := context.WithTimeout(ctx, orDefault(c.t.ConnectTimeout, DefaultConnectTimeout))
	defer cancel()
	header := http.Header{}
	if c.t.Token != "" {
		header.Set("Authorization", "Bearer "+c.t.Token)
	}
	ws, resp, err := websocket.Dial(dctx, c.t.URL, &websocket.DialOptions{HTTPHeader: header, HTTPClient: c.t.HTTPClient})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return nil, nil, ErrUnauthorized
		}
		return nil, nil, fmt.Errorf("remote: connect %s: %w", c.t.URL, err)
	}
	ws.SetReadLimit(maxFrame)
	init := v1.Init{ProtocolVersion: v1.Version, SessionOpts: c.t.SessionOpts, WorkspaceID: c.t.WorkspaceID,
		Resume: resume, LastSeq: c.lastSeq.Load(), HostControl: true, Batch: true}
	frame, _ := v1.Encode(init)
	if err := ws.Write(dctx, websocket.MessageText, frame); err != nil {
		ws.CloseNow()
		return nil, nil, fmt.Errorf("remote: send init: %w", err)
	}
	first, err := c.awaitReady(ctx, ws)
	if err != nil {
		ws.CloseNow()
		return nil, nil, err
	}
	return ws, first, nil
}

// awaitReady waits for the runner's answer to init: ready, or a frame of
// the session's log. When a session is restarted (a resume after its
// agent ended, or after the runner restarted) the runner replays the
// frames after last_seq before its new ready; they are the session's own
// and must not be lost, so the first of them answers init as well as
// ready does, and the loop delivers it and the rest in order. An error
// frame without seq is a refusal, not part of the session.
func (c *conn) awaitReady(ctx context.Context, ws *websocket.Conn) (v1.Frame, error) {
	ictx, cancel := context.WithTimeout(ctx, orDefault(c.t.InitTimeout, DefaultInitTimeout))
	defer cancel()
	for {
		_, data, err := ws.Read(ictx)
		if err != nil {
			if ictx.Err() != nil && ctx.Err() == nil {
				return nil, ErrInitTimeout
			}
			return nil, fmt.Errorf("remote: waiting for ready: %w", err)
		}
		frame, err := v1.Decode(data)
		if err != nil {
			continue
		}
		switch f := frame.(type) {
		case v1.Ready:
			c.setSessionID(f.SessionID)
			return f, nil
		case v1.Error:
			if f.Seq == 0 {
				return nil, &RunnerError{Code: f.Code, Details: f.Details}
			}
		}
		if seqOf(frame) != 0 {
			return frame, nil
		}
	}
}

func (c *conn) setSessionID(id string) {
	c.mu.Lock()
	c.sessionID = id
	c.mu.Unlock()
}

func (c *conn) attach(ws *websocket.Conn) {
	c.mu.Lock()
	c.ws = ws
	close(c.connected)
	c.mu.Unlock()
	c.setHealth(Healthy)
}

func (c *conn) detach() {
	c.mu.Lock()
	c.ws = nil
	c.connected = make(chan struct{})
	c.mu.Unlock()
}

func (c *conn) setHealth(h Health) {
	if Health(c.health.Swap(int32(h))) != h && c.t.OnHealth != nil {
		c.t.OnHealth(h)
	}
}

// Health reports the connection's health.
func (c *conn) Health() Health { return Health(c.health.Load()) }

// SessionID is the runner's session id.
func (c *conn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// loop reads frames and reconnects until the session ends or Close; first
// is the frame that answered init.
func (c *conn) loop(ws *websocket.Conn, first v1.Frame) {
	defer c.wg.Done()
	for {
		pingCtx, stopPing := context.WithCancel(c.ctx)
		c.wg.Add(1)
		go c.ping(pingCtx, ws)
		err := c.handle(first)
		if ferr := c.flush(); err == nil {
			err = ferr
		}
		if err == nil {
			err = c.read(ws)
		}
		stopPing()
		ws.CloseNow()
		c.detach()
		if c.ctx.Err() != nil || isTerminal(err) {
			c.finish(err)
			return
		}
		c.t.logger().Info("remote: connection lost; reconnecting", "err", err)
		c.setHealth(Degraded)
		next, answer, err := c.reconnect()
		if err != nil {
			c.finish(err)
			return
		}
		ws, first = next, answer
		c.attach(ws)
	}
}

// errSessionEnded: the runner closed the connection normally, which it
// does once the session is over. A connection that merely drops (EOF
// without a close frame) is not that: it is resumed.
var errSessionEnded = errors.New("remote: the session ended")

func isTerminal(err error) bool {
	var re *RunnerError
	return errors.Is(err, errSessionEnded) || errors.As(err, &re) || errors.Is(err, ErrUnauthorized)
}

// read delivers message payloads until the connection fails. Reads take
// a context that never ends: Close and every loss of the connection close
// ws, which ends the read, and a read whose context can end arms and
// disarms a watch of it every message.
func (c *conn) read(ws *websocket.Conn) error {
	var r messageReader
	defer r.close()
	ctx := context.WithoutCancel(c.ctx)
	for {
		data, err := r.read(ctx, ws)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				return errSessionEnded
			}
			return err
		}
		err = c.message(data)
		// The lines before a failure are the session's too: they go first.
		if ferr := c.flush(); ferr != nil {
			return ferr
		}
		if err != nil {
			return err
		}
	}
}

// message handles one WebSocket message from the runner.
func (c *conn) message(data []byte) error {
	// The common cases, without a full decode of the frame: one message,
	// or a batch of them.
	if seq, _, line, ok := v1.DecodeRawMessage(data); ok {
		c.deliver(seq, line)
		return nil
	}
	var seq uint64
	var ok bool
	if seq, c.items, ok = v1.SplitBatch(data, c.items[:0]); ok {
		defer clear(c.items)
		return c.readBatch(seq, c.items)
	}
	frame, err := v1.Decode(data)
	if err != nil {
		c.t.logger().Warn("remote: bad frame from runner", "err", err)
		return nil
	}
	return c.handle(frame)
}

// readBatch handles the frames of a batch, the first numbered seq.
func (c *conn) readBatch(seq uint64, items [][]byte) error {
	if c.out == nil {
		c.out = make([][]byte, 0, len(items))
	}
	for i, item := range items {
		n := seq + uint64(i)
		if _, line, ok := v1.DecodeRawLine(item); ok {
			c.deliver(n, line)
			continue
		}
		frame, err := v1.DecodeBatchItem(item, n)
		if err != nil {
			// Its seq is spent all the same: later frames keep theirs.
			c.t.logger().Warn("remote: bad frame from runner", "err", err)
			continue
		}
		if err := c.handle(frame); err != nil {
			return err
		}
	}
	return nil
}

// handle applies one runner frame; frames already seen are dropped.
func (c *conn) handle(frame v1.Frame) error {
	if b, ok := frame.(v1.Batch); ok {
		// Its frames are numbered, and dropped if seen, one by one.
		for _, f := range b.Frames {
			if err := c.handle(f); err != nil {
				return err
			}
		}
		return nil
	}
	seq := seqOf(frame)
	if seq != 0 {
		if seq <= c.lastSeq.Load() {
			return nil
		}
		c.lastSeq.Store(seq)
	}
	switch f := frame.(type) {
	case v1.Ready:
		c.setSessionID(f.SessionID)
		if !f.Resumed {
			c.agentStarts++
			if c.agentStarts > 1 {
				c.resendAfter(0, false)
				if err := c.endLostTurns(f.SessionID); err != nil {
					return err
				}
				c.replayHandshake()
			}
		} else {
			c.resendAfter(f.InputSeq, true)
		}
	case v1.Message:
		c.queue(f.AgentLine())
	case v1.Done:
		c.turnEnded()
	case v1.Error:
		if f.Code == v1.CodeAgentExited || f.Code == v1.CodeLastSeqAhead {
			return &RunnerError{Code: f.Code, Details: f.Details}
		}
		c.t.logger().Warn("remote: runner reported an error", "code", f.Code, "details", f.Details)
	}
	return nil
}

// endLostTurns ends, with an error result each, the turns the old agent
// had not finished when the runner started a new one (the runner was
// killed, or the session ended while nobody was attached): the new agent
// knows nothing of them, and a caller waiting for their results would
// wait forever. The conversation goes on with the new agent.
func (c *conn) endLostTurns(sessionID string) error {
	for n := c.openTurns.Swap(0); n > 0; n-- {
		c.out = append(c.out, lostTurnResult(sessionID))
	}
	return nil
}

// lostTurnResult is the result line that ends a turn lost with its agent.
func lostTurnResult(sessionID string) []byte {
	line, _ := json.Marshal(map[string]any{
		"type": cc.TypeResult, "subtype": "error_during_execution", "is_error": true,
		"duration_ms": 0, "duration_api_ms": 0, "num_turns": 0, "result": "", "stop_reason": nil,
		"session_id": sessionID, "total_cost_usd": 0,
		"usage":  map[string]int{"input_tokens": 0, "output_tokens": 0},
		"errors": []string{ErrTurnLost.Error()},
	})
	return line
}

// replayHandshake sends the first line this connection ever wrote (the
// SDK's initialize) to an agent the runner had to start again, so what it
// set up (hooks, in-process MCP servers) holds for the new agent too. The
// agent's answer carries the old request id, which the SDK drops.
func (c *conn) replayHandshake() {
	c.mu.Lock()
	line := c.handshake
	c.mu.Unlock()
	if line == nil {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.Write(c.ctx, line); err != nil && c.ctx.Err() == nil {
			c.t.logger().Warn("remote: could not replay the handshake to a restarted agent", "err", err)
		}
	}()
}

// deliver hands on a copy of a message line (the reader reuses its
// buffer) unless it was seen already. Each line has its own memory, as
// over a local process: a message the application keeps holds only its
// line.
func (c *conn) deliver(seq uint64, line []byte) {
	if seq <= c.lastSeq.Load() {
		return
	}
	c.lastSeq.Store(seq)
	c.queue(bytes.Clone(line))
}

// queue gathers a line for the next flush.
func (c *conn) queue(line []byte) {
	c.out = append(c.out, line)
}

// turnEnded counts a turn ended: the runner follows every result line
// with a done frame, so the lines need no scan for results.
func (c *conn) turnEnded() {
	if c.openTurns.Add(-1) < 0 {
		c.openTurns.Add(1) // a result of no turn of ours (an interrupt's, say)
	}
}

// flush hands the lines gathered from a message to Read, waiting for it:
// a reader that is behind slows the connection down.
func (c *conn) flush() error {
	if len(c.out) == 0 {
		return nil
	}
	select {
	case c.lines <- c.out:
		c.out = nil // Read's now
		return nil
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
}

func seqOf(f v1.Frame) uint64 {
	switch f := f.(type) {
	case v1.Message:
		return f.Seq
	case v1.Done:
		return f.Seq
	case v1.Error:
		return f.Seq
	case v1.ControlResponse:
		return f.Seq
	case v1.Ready:
		if !f.Resumed {
			return f.Seq
		}
	case v1.Batch:
		return f.Seq
	}
	return 0
}

// reconnect retries with backoff for ReconnectFor, resuming the session.
func (c *conn) reconnect() (*websocket.Conn, v1.Frame, error) {
	deadline := time.Now().Add(orDefault(c.t.ReconnectFor, DefaultReconnectFor))
	wait := 100 * time.Millisecond
	var last error
	for time.Now().Before(deadline) {
		ws, first, err := c.dial(c.ctx, c.SessionID())
		if err == nil {
			return ws, first, nil
		}
		last = err
		var re *RunnerError
		if errors.As(err, &re) && re.Code == v1.CodeShuttingDown {
			re = nil // a runner on its way out: its successor resumes the session
		}
		if re != nil || errors.Is(err, ErrUnauthorized) || c.ctx.Err() != nil {
			return nil, nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return nil, nil, c.ctx.Err()
		}
		wait = min(2*wait, 2*time.Second)
	}
	c.setHealth(Unhealthy)
	return nil, nil, fmt.Errorf("%w: %w", ErrGaveUp, last)
}

// ping checks the connection; an unanswered ping drops it (and so starts
// a reconnect).
func (c *conn) ping(ctx context.Context, ws *websocket.Conn) {
	defer c.wg.Done()
	every := orDefault(c.t.PingInterval, DefaultPingInterval)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		err := ws.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			c.setHealth(Degraded)
			ws.CloseNow()
			return
		}
	}
}

func (c *conn) finish(err error) {
	c.doneOnce.Do(func() {
		if c.ctx.Err() == nil {
			c.setHealth(Unhealthy)
		}
		c.termErr = err
		close(c.done)
	})
}

func (c *conn) Read(ctx context.Context) ([]byte, error) {
	if len(c.pending) == 0 {
		select {
		case c.pending = <-c.lines:
		case <-c.done:
			select {
			case c.pending = <-c.lines:
			default:
				return nil, c.endErr()
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	line := c.pending[0]
	c.pending[0] = nil
	c.pending = c.pending[1:]
	return line, nil
}

// endErr is what Read returns once the connection is over.
func (c *conn) endErr() error {
	if c.termErr == nil || errors.Is(c.termErr, errSessionEnded) || c.ctx.Err() != nil {
		return io.EOF
	}
	return c.termErr
}

// Write sends one line to the agent. While reconnecting it waits (bounded
// by ctx); a line whose write failed is sent again on the new connection.
func (c *conn) Write(ctx context.Context, line []byte) error {
	c.handshakeOnce.Do(func() {
		c.mu.Lock()
		c.handshake = append([]byte(nil), line...)
		c.mu.Unlock()
	})
	frame, err := c.numbered(line)
	if err != nil {
		return err
	}
	if cc.PeekType(line) == cc.TypeUser {
		c.openTurns.Add(1)
	}
	return c.send(ctx, frame)
}

// Bounds of the input lines kept for a resend: inputs are few (prompts,
// permission answers, control responses), and a line this far back was
// applied long ago.
const (
	keepInputs     = 1024
	keepInputBytes = 4 << 20
)

type sentInput struct {
	n     uint64
	frame []byte
}

// numbered gives a line the next input number and keeps the frame until a
// resumed ready says the runner has it.
func (c *conn) numbered(line []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inputN++
	frame, err := v1.Encode(v1.Input{Line: string(line), N: c.inputN})
	if err != nil {
		return nil, err
	}
	c.unacked = append(c.unacked, sentInput{n: c.inputN, frame: frame})
	c.unackedBytes += len(frame)
	for len(c.unacked) > keepInputs || c.unackedBytes > keepInputBytes {
		c.unackedBytes -= len(c.unacked[0].frame)
		c.unacked = c.unacked[1:]
	}
	return frame, nil
}

// resendAfter sends again, in order, the input frames the runner has not
// applied; on a fresh ready (a new agent) they are dropped instead: they
// belonged to the old one.
func (c *conn) resendAfter(applied uint64, resumed bool) {
	c.mu.Lock()
	var todo [][]byte
	kept := c.unacked[:0]
	for _, in := range c.unacked {
		if resumed && in.n > applied {
			todo = append(todo, in.frame)
			kept = append(kept, in)
		}
	}
	if !resumed {
		kept = kept[:0]
	}
	c.unacked = kept
	c.unackedBytes = 0
	for _, in := range kept {
		c.unackedBytes += len(in.frame)
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for _, frame := range todo {
			if err := c.send(c.ctx, frame); err != nil {
				return
			}
		}
	}()
}

// send writes one frame, waiting for a connection while reconnecting; a
// frame whose write failed goes again on the next connection.
func (c *conn) send(ctx context.Context, frame []byte) error {
	for {
		c.mu.Lock()
		ws, connected := c.ws, c.connected
		c.mu.Unlock()
		if ws == nil {
			select {
			case <-connected:
				continue
			case <-c.done:
				return transport.ErrClosed
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := ws.Write(ctx, websocket.MessageText, frame); err == nil {
			return nil
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
		ws.CloseNow() // the loop notices and reconnects
		select {
		case <-c.done:
			return transport.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// CloseWrite has no remote equivalent; Close ends the session.
func (c *conn) CloseWrite() error { return nil }

// Close stops the session on the runner and releases everything.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		ws := c.ws
		c.mu.Unlock()
		if ws != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			frame, _ := v1.Encode(v1.Stop{})
			if ws.Write(ctx, websocket.MessageText, frame) == nil {
				select { // the runner closes once the session has ended
				case <-c.done:
				case <-ctx.Done():
				}
			}
			cancel()
		}
		c.shutdown()
	})
	return nil
}

func (c *conn) shutdown() {
	c.cancel()
	c.mu.Lock()
	if c.ws != nil {
		c.ws.CloseNow()
	}
	c.mu.Unlock()
	c.wg.Wait()
	c.finish(transport.ErrClosed)
}
