package protov1

import (
	"context"
	"errors"
	"fmt"

	cc "github.com/tetherhq/tether/protocol/claudecode"
	v1 "github.com/tetherhq/tether/protocol/runnerv1"
	"github.com/tetherhq/tether/runner"
)

// readFrames handles host frames until the connection or the session ends.
func (c *conn) readFrames(ctx context.Context, sess *runner.Session) error {
	for {
		frame, err := c.readFrame(ctx)
		var fe *v1.FrameError
		switch {
		case errors.As(err, &fe):
			c.srv.emitError(ctx, sess, "", fe.Code, fe.Details)
			continue
		case err != nil:
			return err
		}
		if err := c.srv.handle(ctx, sess, frame); err != nil {
			return err
		}
	}
}

// handle applies one host frame to the session.
func (s *Server) handle(ctx context.Context, sess *runner.Session, frame v1.Frame) error {
	if err := s.prepared(ctx, sess, frame); err != nil {
		return err
	}
	agent := sess.Agent()
	switch f := frame.(type) {
	case v1.Query:
		// One query at a time, as the protocol's hosts send them: a
		// second one would relabel the first one's frames.
		turn := s.turnOf(sess)
		if running, ok := turn.begin(f.RequestID); !ok {
			s.emitError(ctx, sess, f.RequestID, v1.CodeTurnInProgress,
				fmt.Sprintf("query %q is still running: send the next one after its done frame", running))
			return nil
		}
		sess.TurnStarted()
		if err := agent.Prompt(ctx, f.Prompt); err != nil {
			turn.end()
			sess.TurnEnded()
			s.emitError(ctx, sess, f.RequestID, v1.CodeAgentExited, err.Error())
		}
	case v1.Control:
		// Off the read loop (an answer can take a while), on the
		// session's group, which Runner.Shutdown waits for.
		sess.Go(func(ctx context.Context) { s.control(ctx, sess, f) })
	case v1.Interrupt:
		if err := agent.Interrupt(ctx); err != nil {
			s.emitError(ctx, sess, "", v1.CodeControlFailed, err.Error())
		}
	case v1.Input:
		if !s.turnOf(sess).claimInput(f.N) {
			return nil // a resend of a line already applied
		}
		// In a relay session the host's SDK starts turns with user lines
		// of its own: count them as queries are, so a graceful shutdown
		// waits for them too (the agent's result ends them, see pump).
		userTurn := cc.PeekType([]byte(f.Line)) == cc.TypeUser
		if userTurn {
			sess.TurnStarted()
		}
		if err := agent.Input(ctx, []byte(f.Line)); err != nil {
			if userTurn {
				sess.TurnEnded()
			}
			s.emitError(ctx, sess, "", v1.CodeInvalidFrame, err.Error())
		}
	case v1.Stop:
		sess.End("stopped by the host")
		return errSessionOver
	case v1.Init:
		s.emitError(ctx, sess, "", v1.CodeAlreadyInitialized, "this connection already has a session")
	default:
		s.emitError(ctx, sess, "", v1.CodeInvalidFrame, "a host does not send "+frame.FrameType()+" frames")
	}
	return nil
}

// prepared holds a frame bound for the agent until the session's
// workspace is prepared (see runner.Session.Prepared); a session whose
// workspace could not be prepared ends, with an error frame.
func (s *Server) prepared(ctx context.Context, sess *runner.Session, frame v1.Frame) error {
	switch frame.(type) {
	case v1.Query, v1.Control, v1.Interrupt, v1.Input:
	default:
		return nil
	}
	err := sess.Prepared(ctx)
	if errors.Is(err, runner.ErrWorkspace) {
		s.emitError(ctx, sess, requestIDOf(frame), v1.CodeAgentStartFailed, err.Error())
		sess.End("workspace preparation failed")
		return errSessionOver
	}
	return err
}

// control runs a control request off the read loop: the answer comes
// through the agent's output, which the read loop must not block.
func (s *Server) control(ctx context.Context, sess *runner.Session, f v1.Control) {
	resp, err := sess.Agent().Control(ctx, f.Subtype, f.Params)
	if err != nil {
		s.emitError(ctx, sess, f.RequestID, v1.CodeControlFailed, err.Error())
		return
	}
	if len(resp) == 0 {
		resp = []byte("{}")
	}
	s.emit(ctx, sess, v1.ControlResponse{RequestID: f.RequestID, Response: resp})
}

// emit logs a frame (the writer sends it with its seq).
func (s *Server) emit(ctx context.Context, sess *runner.Session, f v1.Frame) {
	frame, err := v1.Encode(f)
	if err == nil {
		_, err = sess.Append(ctx, frame)
	}
	if err != nil {
		s.logger().Warn("could not log a frame", "session", sess.ID(), "type", f.FrameType(), "err", err)
	}
}

func (s *Server) emitError(ctx context.Context, sess *runner.Session, requestID, code, details string) {
	s.emit(ctx, sess, v1.Error{RequestID: requestID, Code: code, Details: details})
}

func requestIDOf(f v1.Frame) string {
	switch f := f.(type) {
	case v1.Query:
		return f.RequestID
	case v1.Control:
		return f.RequestID
	}
	return ""
}
