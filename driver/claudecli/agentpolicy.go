package claudecli

import (
	"context"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/runner"
)

// Canonical returns Claude Code as an agent.Driver under this runner
// driver's policy: the same CLI, environment, sandbox, Bash rewrite and
// session options as protocol v1's sessions, reported as canonical events
// with the model's own commands. now is the events' clock (nil: time.Now).
func (d *Driver) Canonical(now func() time.Time) agent.Driver {
	return &policyCanonical{d: d, now: now}
}

type policyCanonical struct {
	d   *Driver
	now func() time.Time
}

func (p *policyCanonical) Name() string { return "claude" }

func (p *policyCanonical) Capabilities() agent.Capabilities {
	return agent.Capabilities{Resume: true, Questions: true, Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeSession}}
}

// Start starts the CLI in req.Workspace under the runner's policy.
// req.Options are protocol v1's session_opts for Claude Code.
func (p *policyCanonical) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	if req.Fork {
		return nil, &agent.UnsupportedError{Agent: "claude", Capability: "fork on a runner"}
	}
	spec := runner.AgentSpec{SessionID: req.Resume, Workspace: req.Workspace, Home: req.Home,
		Options: req.Options, Resume: req.Resume != ""}
	if spec.SessionID == "" {
		spec.SessionID = claude.NewSessionID()
	}
	var s *canonicalSession
	opts, _, rewrite, err := p.d.launch(spec, func(o *claude.Options) {
		if req.Model != "" {
			o.Model = req.Model
		}
		o.PermissionPromptToolName = "" // the session's own callback asks
		s = newCanonicalSession(p.now, nil)
		s.prepare(o)
	})
	if err != nil {
		return nil, err
	}
	s.rewrite = rewrite
	if req.Resume != "" && req.Home != "" { // the CLI's store is in the session's home
		items, err := transcriptItems(req.Home, req.Resume)
		if err != nil && p.d.cfg.Logger != nil {
			p.d.cfg.Logger.Warn("the resumed conversation's past could not be read", "session", req.Resume, "err", err)
		}
		s.past = items
	}
	if err := s.connect(ctx, opts); err != nil {
		return nil, err
	}
	return s, nil
}
