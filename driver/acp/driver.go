package acp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/internal/agentproc"
	"github.com/tetherhq/tether/transport"
)

// DefaultStartTimeout bounds Start when driver.Config.StartTimeout is zero:
// a Node agent takes a few seconds to load.
const DefaultStartTimeout = 60 * time.Second

// versionTimeout bounds `<cli> --version` in New.
const versionTimeout = 30 * time.Second

// ErrInvalidRequest: a StartRequest the driver refuses.
var ErrInvalidRequest = errors.New("acp: invalid start request")

// Spec is one agent kind that speaks ACP: how to start it and what the
// client offers it.
type Spec struct {
	// Name is the agent kind (gemini).
	Name string
	// CLI is the executable's default name; Args start its ACP mode.
	CLI  string
	Args []string
	// TestedVersion is what Version makes of `<cli> --version` for the
	// release this kind is tested against.
	TestedVersion string
	// Version picks the version out of --version's output; nil takes its
	// last word.
	Version func(out string) string
	// Environ adds the kind's settings to a session's environment, given
	// its home (which may be empty) and workspace.
	Environ func(env []string, home string) ([]string, error)
	// FileSystem offers the agent fs/read_text_file and
	// fs/write_text_file, answered inside the workspace.
	FileSystem bool
	// NoResume refuses to resume though the agent declares it can: the
	// kind's session/load does not work (see the kind's package).
	NoResume bool
	// BeforeResume, when set, runs before a session is resumed, given
	// the agent's environment (HOME is the session's home, if any) and
	// the native id: the kind's fix-ups to what the agent saved.
	BeforeResume func(env []string, nativeID string) error
	// ReplayAfterLoad: the agent replays a loaded session's history after
	// its answer to session/load, then sends its available commands; the
	// session waits for those before it starts.
	ReplayAfterLoad bool
	// ModelArgs, when set, are the arguments that pick a model (a
	// StartRequest.Model); without it a model is refused.
	ModelArgs func(model string) []string
	// WithheldModes are modes the agent offers that a client may not
	// switch to: those that stop asking for approval altogether, which
	// would take every later call out of the runner's approvals.
	WithheldModes []string
	// Images: the release tested declares promptCapabilities.image, so
	// the driver says it takes images before a session has asked (a
	// session goes by what its agent declares).
	Images bool
	// MCP are the MCP transports the kind's agent declares (stdio, which
	// every ACP agent takes, and those of its mcpCapabilities): the
	// driver's capabilities until an agent's initialize says otherwise.
	MCP []agent.MCPTransport
}

// Driver runs sessions of one ACP agent kind; it implements agent.Driver.
type Driver struct {
	spec    Spec
	cfg     driver.Config
	cli     string
	version string
	// launcher starts every agent from one shared thread.
	launcher transport.Launcher

	mu sync.Mutex
	// caps are the capabilities the agent's last initialize declared.
	caps agent.Capabilities
}

var _ agent.Driver = (*Driver)(nil)

// New finds the CLI and checks its version, once. A missing CLI is an
// error matching driver.ErrCLINotFound, another version than
// Spec.TestedVersion a *driver.VersionError (unless AllowUntestedVersion).
func New(cfg driver.Config, spec Spec) (*Driver, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	cli, err := driver.LookPath(spec.Name, cmp.Or(cfg.CLIPath, spec.CLI), cfg.Env)
	if err != nil {
		return nil, err
	}
	out, err := agentproc.Version(cli, cfg.Env, versionTimeout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	version := lastWord(out)
	if spec.Version != nil {
		version = spec.Version(out)
	}
	if err := cfg.CheckVersion(spec.Name, version, spec.TestedVersion); err != nil {
		return nil, err
	}
	if cfg.Sandbox != nil {
		if err := cfg.Sandbox.Available(); err != nil {
			return nil, fmt.Errorf("%s: sandbox: %w", spec.Name, err)
		}
	}
	return &Driver{spec: spec, cfg: cfg, cli: cli, version: version,
		caps: agent.Capabilities{Resume: !spec.NoResume, Diff: true, Images: spec.Images, Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeAlways},
			MCP: slices.Clone(spec.MCP)}}, nil
}

// Maker is New for spec, in the form the driver registry takes
// (driver.Kind.New): an ACP kind registers with acp.Maker(Spec()).
func Maker(spec Spec) func(driver.Config) (agent.Driver, error) {
	return func(cfg driver.Config) (agent.Driver, error) {
		d, err := New(cfg, spec)
		if err != nil {
			return nil, err // not a nil *Driver in an interface
		}
		return d, nil
	}
}

func lastWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// Name is the agent kind.
func (d *Driver) Name() string { return d.spec.Name }

// Version is what the CLI's --version said.
func (d *Driver) Version() string { return d.version }

// Capabilities are what the agent's last initialize answer declared
// (resume when it loads or resumes sessions, images when it takes image
// blocks), with the session's diff and approvals allowed once or always;
// before any session, what the kind's Spec says.
func (d *Driver) Capabilities() agent.Capabilities {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.caps
}

func (d *Driver) learn(c agent.Capabilities) {
	d.mu.Lock()
	d.caps = c
	d.mu.Unlock()
}

// Start runs the agent and opens its session: a new one, or req.Resume's.
func (d *Driver) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	switch {
	case req.Fork:
		return nil, &agent.UnsupportedError{Agent: d.spec.Name, Capability: "fork"}
	case req.Resume != "" && d.spec.NoResume:
		return nil, &agent.UnsupportedError{Agent: d.spec.Name, Capability: "resume"}
	case req.Native:
		return nil, &agent.UnsupportedError{Agent: d.spec.Name, Capability: "native"}
	case req.Model != "" && d.spec.ModelArgs == nil:
		return nil, fmt.Errorf("%w: %s takes no model", ErrInvalidRequest, d.spec.Name)
	}
	if o := strings.TrimSpace(string(req.Options)); o != "" && o != "null" && o != "{}" {
		return nil, fmt.Errorf("%w: %s takes no agent options, got %s", ErrInvalidRequest, d.spec.Name, o)
	}
	// Checked against what the agent last declared; its initialize is
	// checked again once the agent runs.
	if err := agent.CheckMCPServers(d.spec.Name, d.Capabilities().MCP, req.MCPServers); err != nil {
		return nil, err
	}
	if req.Home != "" {
		if err := agentproc.WriteHomeFiles(req.Home, d.cfg.HomeFiles); err != nil {
			return nil, fmt.Errorf("%s: %w", d.spec.Name, err)
		}
	}
	env := d.cfg.Env
	if env == nil {
		env = os.Environ()
	}
	env = append([]string(nil), env...)
	if req.Home != "" {
		env = agentproc.SetEnv(env, "HOME", req.Home)
	}
	if d.spec.Environ != nil {
		var err error
		if env, err = d.spec.Environ(env, req.Home); err != nil {
			return nil, fmt.Errorf("%s: %w", d.spec.Name, err)
		}
	}
	if req.Resume != "" && d.spec.BeforeResume != nil {
		if err := d.spec.BeforeResume(env, req.Resume); err != nil {
			return nil, fmt.Errorf("%s: resume %s: %w", d.spec.Name, req.Resume, err)
		}
	}
	cmd, err := d.command(req, env)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StartTimeout)
	defer cancel()
	return start(ctx, d, cmd, req)
}

// command is the agent's command line, wrapped in the sandbox if any.
func (d *Driver) command(req agent.StartRequest, env []string) (*transport.Command, error) {
	args := append([]string(nil), d.spec.Args...)
	if req.Model != "" {
		args = append(args, d.spec.ModelArgs(req.Model)...)
	}
	log := d.cfg.Logger
	name := d.spec.Name
	cmd := &transport.Command{Path: d.cli, Args: args, Env: env, Dir: req.Workspace, Logger: log,
		Launcher: &d.launcher, ExitGrace: 2 * time.Second, TermGrace: 2 * time.Second,
		Stderr: func(line string) { log.Debug(name+" stderr", "line", line) }}
	if d.cfg.Sandbox == nil {
		return cmd, nil
	}
	if err := agentproc.Sandbox(cmd, *d.cfg.Sandbox, req.Workspace, req.Home); err != nil {
		return nil, fmt.Errorf("%s: sandbox: %w", d.spec.Name, err)
	}
	return cmd, nil
}
