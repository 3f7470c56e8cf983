package protov1

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetherhq/tether/agent"
	v1 "github.com/tetherhq/tether/protocol/runnerv1"
	"github.com/tetherhq/tether/runner/sessions"
)

// readFrames handles host frames until the connection or the session ends.
func (c *conn) readFrames(ctx context.Context, id string) error {
	for {
		frame, err := c.readFrame(ctx)
		var fe *v1.FrameError
		switch {
		case errors.As(err, &fe):
			c.sendError(ctx, "", fe.Code, fe.Details)
			continue
		case err != nil:
			return err
		}
		if err := c.handle(ctx, id, frame); err != nil {
			return err
		}
	}
}

// handle applies one host frame to the session. A frame the session
// refuses is answered on this connection alone, without a seq: it is no
// event of the session's.
func (c *conn) handle(ctx context.Context, id string, frame v1.Frame) error {
	core := c.srv.Sessions
	switch f := frame.(type) {
	case v1.Query:
		// One query at a time, as the protocol's hosts send them.
		err := core.Prompt(ctx, id, agent.Prompt{Native: f.Prompt, RequestID: f.RequestID})
		switch {
		case err == nil:
			c.query = f.RequestID
		case errors.Is(err, agent.ErrTurnInProgress):
			running := "a query"
			if c.query != "" {
				running = fmt.Sprintf("query %q", c.query)
			}
			c.sendError(ctx, f.RequestID, v1.CodeTurnInProgress,
				running+" is still running: send the next one after its done frame")
		default:
			return c.failed(ctx, f.RequestID, err)
		}
	case v1.Control:
		// Off the read loop: an answer can take a while.
		c.answers.Go(func() { c.control(ctx, id, f) })
	case v1.Interrupt:
		if err := core.Interrupt(ctx, id); err != nil && !errors.Is(err, agent.ErrNoTurn) {
			c.sendError(ctx, "", v1.CodeControlFailed, err.Error())
		}
	case v1.Input:
		// The core gives a numbered line to the agent once.
		if err := core.Input(ctx, id, f.N, []byte(f.Line)); err != nil {
			if errors.Is(err, sessions.ErrWorkspace) {
				return c.failed(ctx, "", err)
			}
			c.sendError(ctx, "", v1.CodeInvalidFrame, err.Error())
		}
	case v1.Stop:
		if err := core.Close(ctx, id); err != nil && !errors.Is(err, sessions.ErrNotFound) {
			c.log.Warn("session not closed cleanly", "err", err)
		}
		return errSessionOver
	case v1.Init:
		c.sendError(ctx, "", v1.CodeAlreadyInitialized, "this connection already has a session")
	default:
		c.sendError(ctx, "", v1.CodeInvalidFrame, "a host does not send "+frame.FrameType()+" frames")
	}
	return nil
}

// failed answers a frame the session could not take: a workspace that
// could not be prepared ends the session (the core closes it), anything
// else leaves it as it was.
func (c *conn) failed(ctx context.Context, requestID string, err error) error {
	switch {
	case errors.Is(err, sessions.ErrWorkspace):
		c.sendError(ctx, requestID, v1.CodeAgentStartFailed, err.Error())
		return errSessionOver
	case errors.Is(err, sessions.ErrShuttingDown):
		c.sendError(ctx, requestID, v1.CodeShuttingDown, err.Error())
	default:
		c.sendError(ctx, requestID, v1.CodeAgentExited, err.Error())
	}
	return nil
}

// control answers a control frame with the agent's answer, or why not.
func (c *conn) control(ctx context.Context, id string, f v1.Control) {
	resp, err := c.srv.Sessions.Control(ctx, id, f.Subtype, f.Params)
	if err != nil {
		c.sendError(ctx, f.RequestID, v1.CodeControlFailed, err.Error())
		return
	}
	if len(resp) == 0 {
		resp = []byte("{}")
	}
	frame, err := v1.Encode(v1.ControlResponse{RequestID: f.RequestID, Response: resp})
	if err == nil {
		err = c.write(ctx, frame)
	}
	if err != nil {
		c.log.Debug("control response not sent", "err", err)
	}
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
