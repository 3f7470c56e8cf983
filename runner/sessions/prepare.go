package sessions

import (
	"context"
	"log/slog"

	"github.com/tetherhq/tether/runner/workspace"
)

// preparation is a session's workspace repository and its "before"
// snapshot, made while the agent starts, so a session is ready as soon as
// its agent is. Nothing from a client reaches the agent before it is done
// (session.prepared), so the snapshot holds the workspace as it was
// before the session.
type preparation struct {
	done   chan struct{}
	err    error  // the repository could not be made; set before done closes
	before string // the snapshot, when one was taken
	cancel context.CancelFunc
}

func prepareWorkspace(ws *workspace.Workspace, id string, log *slog.Logger) *preparation {
	ctx, cancel := context.WithCancel(context.Background())
	p := &preparation{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.done)
		if err := ws.Prepare(ctx); err != nil {
			p.err = err
			log.Error("workspace preparation failed", "session", id, "err", err)
			return
		}
		before, err := ws.Snapshot(ctx, "tether: before session "+id)
		if err != nil {
			log.Warn("workspace snapshot failed: the session's diff is the agent's own", "session", id, "err", err)
			return
		}
		p.before = before
	}()
	return p
}

// abandon stops a preparation whose session did not start, and waits.
func (p *preparation) abandon() {
	p.cancel()
	<-p.done
}
