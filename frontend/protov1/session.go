package protov1

import (
	"context"
	"errors"
	"fmt"

	v1 "github.com/tetherhq/tether/protocol/runnerv1"
	"github.com/tetherhq/tether/runner"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/workspace"
)

// open attaches to a live session (resumed) or starts one: new, or an
// ended one restarted from its log. after is the seq the connection's
// stream starts after: the host's last_seq when it reconnects; for a
// restarted session that the host resumes afresh (last_seq 0), the end of
// the old log — its frames belong to the earlier connection, and the agent
// itself carries the conversation on.
func (s *Server) open(ctx context.Context, init v1.Init) (sess *runner.Session, resumed bool, after uint64, err error) {
	if init.Resume != "" {
		if sess, ok := s.Runner.Lookup(init.Resume); ok {
			if init.WorkspaceID != "" && init.WorkspaceID != sess.WorkspaceID() {
				return nil, false, 0, runner.ErrWorkspaceMismatch
			}
			// A live session has logged every frame it sent, even if a
			// crash since lost some (the restart numbered on after them).
			if last, _ := s.Runner.LastSeq(sess.ID()); init.LastSeq > last {
				return nil, false, 0, fmt.Errorf("%w: last_seq %d, the session's last frame is %d", runner.ErrAhead, init.LastSeq, last)
			}
			return sess, true, init.LastSeq, nil
		}
	}
	sess, err = s.Runner.Open(ctx, runner.OpenRequest{
		WorkspaceID: init.WorkspaceID, Options: init.SessionOpts,
		Relay: init.HostControl, Resume: init.Resume, LastSeq: init.LastSeq,
	})
	if err != nil {
		return nil, false, 0, err
	}
	after = init.LastSeq
	if init.Resume != "" && after == 0 {
		after, _ = s.Runner.LastSeq(sess.ID())
	}
	s.turn(sess).setRelay(init.HostControl)
	s.emit(ctx, sess, v1.Ready{SessionID: sess.ID()})
	sess.Go(s.pump(sess))
	return sess, false, after, nil
}

// pumpBatch bounds the outputs the pump logs in one append.
const pumpBatch = 256

// frameOverhead is about what a message frame adds to its line (and the
// done frame after a result): room reserved so frames are encoded without
// growing the buffer.
const frameOverhead = 128

// pump turns the agent's output into frames for the session's life.
func (s *Server) pump(sess *runner.Session) func(context.Context) {
	turn := s.turn(sess)
	return func(ctx context.Context) {
		defer s.forget(sess)
		p := &pumpState{srv: s, sess: sess, turn: turn}
		agent := sess.Agent()
		for {
			outs, err := nextOutputs(ctx, agent, p.outs[:0])
			p.outs = outs
			if len(outs) > 0 {
				p.log(ctx)
			}
			if err != nil {
				if ctx.Err() == nil {
					s.emitError(ctx, sess, turn.get(), v1.CodeAgentExited, err.Error())
					sess.End("agent ended: " + err.Error())
				}
				return
			}
		}
	}
}

// nextOutputs waits for the agent's next output and takes what else it
// already has, when it can hand over several at once.
func nextOutputs(ctx context.Context, agent runner.Agent, dst []runner.Output) ([]runner.Output, error) {
	if b, ok := agent.(runner.BatchAgent); ok {
		return b.NextBatch(ctx, dst, pumpBatch)
	}
	out, err := agent.Next(ctx)
	if err != nil {
		return dst, err
	}
	return append(dst, out), nil
}

// pumpState is the pump's reusable buffers.
type pumpState struct {
	srv  *Server
	sess *runner.Session
	turn *turnState

	outs   []runner.Output
	buf    []byte // the frames, back to back
	ends   []int  // where each frame ends in buf
	frames [][]byte
}

// log appends the frames of p.outs in one batch: a message per line, and
// after a line that ends a turn, its done frame. The session counts a
// turn ended (for shutdown) only once its done frame is logged; the
// query's turn closes just before, so a host that sees the done frame can
// send its next query at once.
func (p *pumpState) log(ctx context.Context) {
	defer p.trim()
	need := 0
	for _, out := range p.outs {
		need += len(out.Line) + frameOverhead
	}
	p.buf = sized(p.buf, need)
	ended := 0
	requestID, relay := p.turn.get(), p.turn.isRelay()
	for _, out := range p.outs {
		p.buf = encodeLine(p.buf, relay, requestID, out.Line)
		p.ends = append(p.ends, len(p.buf))
		if out.TurnEnded {
			reason := "completed"
			if out.TurnFailed {
				reason = "error"
			}
			done, _ := v1.Encode(v1.Done{RequestID: requestID, Reason: reason})
			p.buf = append(p.buf, done...)
			p.ends = append(p.ends, len(p.buf))
			ended++
		}
	}
	start := 0
	for _, end := range p.ends {
		p.frames = append(p.frames, p.buf[start:end])
		start = end
	}
	if ended > 0 {
		p.turn.end() // this batch keeps the request id it took
	}
	if _, err := p.sess.AppendBatch(ctx, p.frames); err != nil {
		p.appendEach(ctx, err)
	}
	for range ended {
		p.sess.TurnEnded()
	}
}

// appendEach logs the frames one by one after a batch failed, so a frame
// the log refuses (too large) costs only itself.
func (p *pumpState) appendEach(ctx context.Context, batchErr error) {
	if !errors.Is(batchErr, eventlog.ErrTooLarge) {
		p.srv.logger().Warn("could not log agent output", "session", p.sess.ID(), "frames", len(p.frames), "err", batchErr)
		return
	}
	for _, f := range p.frames {
		if _, err := p.sess.Append(ctx, f); err != nil {
			p.srv.logger().Warn("could not log agent output", "session", p.sess.ID(), "err", err)
		}
	}
}

// trim empties the buffers for the next batch, dropping large ones once
// a batch is small again, so an idle session does not hold them.
func (p *pumpState) trim() {
	if cap(p.outs) > keepOutputs && len(p.outs) < keepOutputs/4 {
		p.outs, p.frames, p.ends = nil, nil, nil
	}
	clear(p.outs)
	clear(p.frames)
	p.outs, p.frames, p.ends = p.outs[:0], p.frames[:0], p.ends[:0]
	p.buf = trimmed(p.buf)
}

// keepOutputs is the most outputs the pump keeps room for once idle.
const keepOutputs = 32

// encodeLine frames one agent line: embedded as is for relay sessions
// when it is a JSON object that any decoder takes (the host's SDK parses
// it once), else as the seed protocol's payload string.
func encodeLine(dst []byte, relay bool, requestID string, line []byte) []byte {
	if relay && v1.EmbeddableLine(line) {
		return v1.AppendMessageRaw(dst, 0, requestID, line)
	}
	return v1.AppendMessageLine(dst, 0, requestID, line)
}

// codeFor maps an open failure to an error frame code; "" means the
// connection itself is gone.
func codeFor(err error) (string, string) {
	var fe *v1.FrameError
	switch {
	case errors.As(err, &fe):
		return fe.Code, fe.Details
	case errors.Is(err, workspace.ErrInvalidID):
		return v1.CodeInvalidWorkspace, err.Error()
	case errors.Is(err, workspace.ErrBusy):
		return v1.CodeWorkspaceBusy, err.Error()
	case errors.Is(err, runner.ErrInvalidOptions):
		return v1.CodeInvalidOptions, err.Error()
	case errors.Is(err, runner.ErrTooManySessions):
		return v1.CodeTooManySessions, err.Error()
	case errors.Is(err, runner.ErrSessionNotFound), errors.Is(err, runner.ErrWorkspaceMismatch), errors.Is(err, eventlog.ErrUnknownSession):
		return v1.CodeSessionNotFound, err.Error()
	case errors.Is(err, runner.ErrShuttingDown):
		return v1.CodeShuttingDown, err.Error()
	case errors.Is(err, runner.ErrAhead):
		return v1.CodeLastSeqAhead, err.Error()
	case isClosed(err), errors.Is(err, context.DeadlineExceeded):
		return "", ""
	}
	return v1.CodeAgentStartFailed, err.Error()
}
