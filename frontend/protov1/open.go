package protov1

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetherhq/tether/agent"
	v1 "github.com/tetherhq/tether/protocol/runnerv1"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// errNoSession: a resume names no session a v1 host can resume.
var errNoSession = errors.New("protov1: no such session")

// open attaches to a live session (resumed) or starts one: new, or an
// ended one started again from its log (its agent resumes the
// conversation). after is the seq the connection's stream starts after:
// the host's last_seq when it comes back; for a session started again
// that the host resumes afresh (last_seq 0), the end of its log before —
// those frames belong to the earlier connection, and the agent itself
// carries the conversation on.
func (c *conn) open(ctx context.Context, init v1.Init) (info sessions.Info, resumed bool, after uint64, err error) {
	core := c.srv.Sessions
	if init.Resume == "" {
		info, err = core.Create(ctx, sessions.CreateRequest{Agent: agentKind, WorkspaceID: init.WorkspaceID,
			Options: init.SessionOpts, Native: true, Relay: init.HostControl})
		return info, false, 0, err
	}
	info, err = core.Get(init.Resume)
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		return info, false, 0, fmt.Errorf("%w: %s", errNoSession, init.Resume)
	case err != nil:
		return info, false, 0, err
	case !info.Native || info.Agent != agentKind:
		return info, false, 0, fmt.Errorf("%w: %s is not a protocol v1 session", errNoSession, init.Resume)
	case init.WorkspaceID != "" && init.WorkspaceID != info.WorkspaceID:
		return info, false, 0, fmt.Errorf("%w: %s belongs to another workspace", errNoSession, init.Resume)
	case info.State != sessions.StateEnded:
		// A live session has logged every frame it sent, even if a crash
		// since lost some (a reopen numbered on after them).
		if init.LastSeq > info.LastSeq {
			return info, false, 0, fmt.Errorf("%w: last_seq %d, the session's last frame is %d", sessions.ErrAhead, init.LastSeq, info.LastSeq)
		}
		return info, true, init.LastSeq, nil
	}
	after = init.LastSeq
	if after == 0 {
		after = info.LastSeq
	}
	info, err = core.Reopen(ctx, init.Resume, init.LastSeq, init.HostControl)
	return info, false, after, err
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
	case errors.Is(err, agent.ErrInvalidOptions):
		return v1.CodeInvalidOptions, err.Error()
	case errors.Is(err, sessions.ErrTooManySessions):
		return v1.CodeTooManySessions, err.Error()
	case errors.Is(err, errNoSession):
		return v1.CodeSessionNotFound, err.Error()
	case errors.Is(err, sessions.ErrShuttingDown):
		return v1.CodeShuttingDown, err.Error()
	case errors.Is(err, sessions.ErrAhead):
		return v1.CodeLastSeqAhead, err.Error()
	case isClosed(err), errors.Is(err, context.DeadlineExceeded):
		return "", ""
	}
	return v1.CodeAgentStartFailed, err.Error()
}
