package acp

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/runner/sessions"
)

// NewRemoteCore is the core of a runner, through its sessions API.
func NewRemoteCore(c *client.Client) *RemoteCore { return &RemoteCore{client: c} }

var _ Core = (*RemoteCore)(nil)

// RemoteCore is a runner's sessions seen as the session core a front end
// takes (the methods of sessions.Core that the API offers), for a front
// end that runs on one machine while its agents run on a runner. The
// calls of sessions.Core that take no context are bounded by Timeout.
type RemoteCore struct {
	client  *client.Client
	Timeout time.Duration // for Get and List; zero means 10 s
}

func (c *RemoteCore) bounded() (context.Context, context.CancelFunc) {
	d := c.Timeout
	if d <= 0 {
		d = 10 * time.Second
	}
	return context.WithTimeout(context.Background(), d)
}

// Agents is the runner's agents; nil when it does not answer.
func (c *RemoteCore) Agents() map[string]agent.Capabilities {
	ctx, cancel := c.bounded()
	defer cancel()
	a, _ := c.client.Agents(ctx)
	return a
}

func (c *RemoteCore) Create(ctx context.Context, req sessions.CreateRequest) (sessions.Info, error) {
	s, err := c.client.Create(ctx, client.CreateRequest{Agent: req.Agent, WorkspaceID: req.WorkspaceID, Model: req.Model,
		Resume: req.Resume, Fork: req.Fork, Runner: req.Runner, MCPServers: req.MCPServers})
	return info(s), coreError(err)
}

// Reopen starts an ended session of the runner again (POST
// /v1/sessions/{id}/resume); the runner numbers on after its own log, so
// lastSeq and relay, a protocol v1 client's, do not apply.
func (c *RemoteCore) Reopen(ctx context.Context, id string, _ uint64, _ bool) (sessions.Info, error) {
	s, err := c.client.Resume(ctx, id)
	return info(s), coreError(err)
}

func (c *RemoteCore) Get(id string) (sessions.Info, error) {
	ctx, cancel := c.bounded()
	defer cancel()
	s, err := c.client.Get(ctx, id)
	return info(s), coreError(err)
}

func (c *RemoteCore) List() []sessions.Info {
	ctx, cancel := c.bounded()
	defer cancel()
	list, _ := c.client.Sessions(ctx)
	out := make([]sessions.Info, 0, len(list))
	for _, s := range list {
		out = append(out, info(s))
	}
	return out
}

func (c *RemoteCore) Close(ctx context.Context, id string) error {
	return coreError(c.client.Close(ctx, id))
}

func (c *RemoteCore) Prompt(ctx context.Context, id string, p agent.Prompt) error {
	return coreError(c.client.Prompt(ctx, id, p.Text)) // the API takes the text only
}

func (c *RemoteCore) Interrupt(ctx context.Context, id string) error {
	return coreError(c.client.Interrupt(ctx, id))
}

func (c *RemoteCore) Events(ctx context.Context, id string, after uint64) iter.Seq2[agent.Event, error] {
	return c.client.Events(ctx, id, after, 0)
}

func (c *RemoteCore) Resolve(ctx context.Context, sessionID string, r agent.Resolution) (agent.Resolution, error) {
	won, err := c.client.Resolve(ctx, sessionID, r.ApprovalID, client.Answer{Decision: r.Decision, Scope: r.Scope,
		Reason: r.Reason, Answers: r.Answers, Input: r.Input})
	return won, coreError(err)
}

func info(s client.Session) sessions.Info {
	return sessions.Info{ID: s.ID, Agent: s.Agent, WorkspaceID: s.WorkspaceID, NativeID: s.NativeID,
		State: sessions.State(s.State), Created: s.Created, LastSeq: s.LastSeq, TurnID: s.TurnID, Runner: s.Runner}
}

// coreError makes the API's "no such session" the core's.
func coreError(err error) error {
	if errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("%w: %w", sessions.ErrNotFound, err)
	}
	return err
}
