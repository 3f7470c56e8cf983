package protov1

import (
	"context"
	"encoding/json"
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
	s.turn(sess).relay = init.HostControl
	s.emit(ctx, sess, v1.Ready{SessionID: sess.ID()})
	sess.Go(s.pump(sess))
	return sess, false, after, nil
}

// pump turns the agent's output into frames for the session's life.
func (s *Server) pump(sess *runner.Session) func(context.Context) {
	turn := s.turn(sess)
	return func(ctx context.Context) {
		defer s.forget(sess)
		agent := sess.Agent()
		var buf []byte
		for {
			out, err := agent.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.emitError(ctx, sess, turn.get(), v1.CodeAgentExited, err.Error())
					sess.End("agent ended: " + err.Error())
				}
				return
			}
			buf = encodeLine(buf[:0], turn, out.Line)
			if _, err := sess.Append(ctx, buf); err != nil {
				s.logger().Warn("could not log agent output", "session", sess.ID(), "err", err)
			}
			if out.TurnEnded {
				reason := "completed"
				if out.TurnFailed {
					reason = "error"
				}
				s.emit(ctx, sess, v1.Done{RequestID: turn.get(), Reason: reason})
				sess.TurnEnded()
			}
		}
	}
}

// encodeLine frames one agent line: embedded as is for relay sessions
// when it is a JSON object (the host's SDK parses it once), else as the
// seed protocol's payload string.
func encodeLine(dst []byte, turn *turnState, line []byte) []byte {
	if turn.relay && len(line) > 1 && line[0] == '{' && json.Valid(line) {
		return v1.AppendMessageRaw(dst, 0, turn.get(), line)
	}
	return v1.AppendMessageLine(dst, 0, turn.get(), line)
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
