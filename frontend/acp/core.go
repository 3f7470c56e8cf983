package acp

import (
	"context"
	"iter"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/sessions"
)

// Core is what the front end needs of a session core: sessions.Core has
// it as it is, and a remote runner through client.ACPCore.
type Core interface {
	Agents() map[string]agent.Capabilities
	Create(ctx context.Context, req sessions.CreateRequest) (sessions.Info, error)
	Reopen(ctx context.Context, id string, lastSeq uint64, relay bool) (sessions.Info, error)
	Get(id string) (sessions.Info, error)
	List() []sessions.Info
	Close(ctx context.Context, id string) error
	Prompt(ctx context.Context, id string, p agent.Prompt) error
	Interrupt(ctx context.Context, id string) error
	Configure(ctx context.Context, id string, set agent.Settings) (sessions.Info, error)
	Events(ctx context.Context, id string, after uint64) iter.Seq2[agent.Event, error]
	Resolve(ctx context.Context, sessionID string, r agent.Resolution) (agent.Resolution, error)
	// Approvals are the pending ones: an approval a rule of its session
	// answered as it came is not put to the editor.
	Approvals() ([]approvals.Record, error)
}

var _ Core = sessions.Core(nil)

// Opener opens the core that serves the workspaces of root: a session's
// cwd is a workspace, named by its base name, of the root that is its
// parent directory. A front end asks once per root; an opener that
// serves one root only refuses another with an error that says so.
type Opener func(ctx context.Context, root string) (Core, error)
