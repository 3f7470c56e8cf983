package claudecli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/driver/internal/agentproc"
	"github.com/tetherhq/tether/sandbox"
	"github.com/tetherhq/tether/transport"
)

// Config is the runner's side of the policy: which CLI, which environment,
// which sandbox. Hosts cannot change any of it.
type Config struct {
	// CLIPath is the claude executable (discovered when empty).
	CLIPath string
	// Env is the whole environment the CLI gets (API keys live here and
	// only here); HOME is set to the workspace's private home.
	Env map[string]string
	// Sandbox runs the CLI under bubblewrap when set.
	Sandbox *SandboxConfig
	// InitializeTimeout and ShutdownGrace as in claude.Options.
	InitializeTimeout time.Duration
	ShutdownGrace     time.Duration
	Logger            *slog.Logger
	// Now is the events' clock; nil means time.Now.
	Now func() time.Time
}

// SandboxConfig is the sandbox policy shared by all sessions.
type SandboxConfig struct {
	// Hide are directories no session may see (the workspaces root, the
	// runner's data directory).
	Hide []string
	// ReadOnly are paths every session may read besides the system view
	// and the CLI's installation (the operator's choice).
	ReadOnly []string
	// AllowToolNetwork lets a session ask for network in Bash commands.
	AllowToolNetwork bool
}

// Driver is Claude Code as an agent.Driver under a runner's policy: its
// CLI, environment and sandbox, the options a client may set
// (SessionOptions), the Bash rewrite, and every event showing the model's
// own commands. A native session (StartRequest.Native) is protocol v1's:
// the client's options are applied as given and every line of the CLI's
// is an event's raw; with Relay the client speaks the control protocol
// too.
type Driver struct {
	cfg     Config
	cliPath string
	// launcher forks every CLI from one shared thread and waits for their
	// exits and stderr together: a runner holds many agents, and a thread
	// and goroutines each would cost more than an idle agent else.
	launcher transport.Launcher
	now      func() time.Time
}

var _ agent.Driver = (*Driver)(nil)

// New checks the CLI (and the sandbox, when configured) once.
func New(cfg Config) (*Driver, error) {
	path, err := claude.FindCLI(cfg.CLIPath)
	if err != nil {
		return nil, err
	}
	if cfg.Sandbox != nil {
		probe := sandbox.Policy{Hide: cfg.Sandbox.Hide, ReadOnly: cfg.Sandbox.ReadOnly}
		if err := probe.Available(); err != nil {
			return nil, fmt.Errorf("claudecli: sandbox: %w", err)
		}
	}
	return &Driver{cfg: cfg, cliPath: path, now: cfg.Now}, nil
}

func (d *Driver) Name() string { return "claude" }

func (d *Driver) Capabilities() agent.Capabilities {
	return agent.Capabilities{Resume: true, Questions: true, Native: true, EditInput: true, Images: true, Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeSession},
		Modes: modes(), SetModel: true, Models: models(), MCP: mcpTransports()}
}

// mcpTransports are the MCP servers' transports --mcp-config takes.
func mcpTransports() []agent.MCPTransport {
	return []agent.MCPTransport{agent.MCPStdio, agent.MCPHTTP, agent.MCPSSE}
}

// Validate checks session options before anything is started.
func (d *Driver) Validate(opts json.RawMessage) error {
	o, err := ParseOptions(opts)
	if err != nil {
		return err
	}
	if o.ToolNetwork && d.cfg.Sandbox != nil && !d.cfg.Sandbox.AllowToolNetwork {
		return fmt.Errorf("%w: tool_network is not allowed on this runner", ErrInvalidOptions)
	}
	return nil
}

// Start starts the CLI in req.Workspace under the runner's policy.
// req.Options are protocol v1's session_opts for Claude Code.
func (d *Driver) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	if req.Fork {
		return nil, &agent.UnsupportedError{Agent: "claude", Capability: "fork on a runner"}
	}
	if err := d.Validate(req.Options); err != nil {
		return nil, err
	}
	mcpServers, err := d.mcpServers(req)
	if err != nil {
		return nil, err
	}
	spec := launchSpec{SessionID: req.Resume, Workspace: req.Workspace, Home: req.Home, Options: req.Options, Resume: req.Resume != "",
		MCPServers: mcpServers}
	if spec.SessionID == "" {
		spec.SessionID = req.NativeID
	}
	if spec.SessionID == "" {
		spec.SessionID = claude.NewSessionID()
	}
	s := newCanonicalSession(d.now, nil)
	s.claim = req.Claim
	s.hostKeepsHistory = req.HostKeepsHistory
	opts, cmd, rewrite, err := d.launch(spec, func(o *claude.Options) {
		if req.Model != "" {
			o.Model = req.Model
		}
		if req.Mode != "" {
			o.PermissionMode = claude.PermissionMode(req.Mode)
		}
		if !req.Native {
			o.PermissionPromptToolName = "" // the session's own callback asks
			s.prepare(o)
		}
	})
	if err != nil {
		return nil, err
	}
	s.rewrite = rewrite
	if req.Resume != "" && req.Home != "" { // the CLI's store is in the session's home
		items, err := transcriptItems(req.Home, req.Resume)
		if err != nil {
			d.logger().Warn("the resumed conversation's past could not be read", "session", req.Resume, "err", err)
		}
		s.past = items
	}
	if req.Relay {
		conn, err := cmd.Connect(ctx)
		if err != nil {
			return nil, err
		}
		s.relay = newRelayLink(conn, spec.SessionID, rewrite, d.logger().With("session", spec.SessionID))
		s.relay.lineError, s.relay.refused = s.lineError, s.nativeLine
		s.begin(s.relay, opts.Model, opts.Cwd)
		return s, nil
	}
	if req.Native {
		s.native(&opts)
	}
	if err := s.connect(ctx, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// launchSpec is what a session's CLI is started with.
type launchSpec struct {
	SessionID string
	Workspace string
	Home      string
	Options   json.RawMessage
	Resume    bool
	// MCPServers are the client's MCP servers as --mcp-config takes them,
	// by name.
	MCPServers map[string]json.RawMessage
}

// launch applies the runner's policy to a session: its options, checked;
// no settings files; the CLI's command, sandboxed; the Bash rewrite. The
// options it returns run that command (Transport) with the rewrite's hook.
// prepare, if set, adjusts the options before the command line is built.
func (d *Driver) launch(spec launchSpec, prepare func(*claude.Options)) (claude.Options, *transport.Command, *bashRewriter, error) {
	o, err := ParseOptions(spec.Options)
	if err != nil {
		return claude.Options{}, nil, nil, err
	}
	dir, err := workingDir(spec.Workspace, o.Cwd)
	if err != nil {
		return claude.Options{}, nil, nil, err
	}
	opts := claude.Options{Cwd: dir, ReplaceEnv: true, Env: d.env(spec.Home), Logger: d.cfg.Logger,
		InitializeTimeout: d.cfg.InitializeTimeout, ShutdownGrace: d.cfg.ShutdownGrace}
	apply(o, &opts, spec.Workspace)
	mcpArgs, err := mcpConfigArgs(spec.Home, spec.MCPServers)
	if err != nil {
		return claude.Options{}, nil, nil, err
	}
	// A second --mcp-config besides the one of the host's in-process
	// servers (apply): the CLI merges them.
	opts.ExtraArgs = append(opts.ExtraArgs, mcpArgs...)
	// No settings or MCP configuration from files: the agent can write its
	// workspace and its home, and a settings file there (.claude/settings
	// .json, settings.local.json, ~/.claude/settings.json) or an .mcp.json
	// or ~/.claude.json would run commands of its choosing in the CLI's own
	// process (command hooks, stdio MCP servers, apiKeyHelper …), outside
	// the Bash rewrite and the session's permissions, in this session or
	// the next.
	opts.SettingSources = []string{}
	opts.StrictMCPConfig = true
	if d.cfg.Sandbox != nil && !o.ToolNetwork {
		// The CLI process keeps network for the model API; its own web
		// tools would use it too, so they go with Bash's network.
		opts.DisallowedTools = append(opts.DisallowedTools, "WebFetch", "WebSearch")
	}
	if spec.Resume {
		opts.Resume = spec.SessionID
	} else {
		opts.SessionID = spec.SessionID
	}
	if prepare != nil {
		prepare(&opts)
	}
	cmd, policy, err := d.command(&opts, spec, o.ToolNetwork)
	if err != nil {
		return claude.Options{}, nil, nil, err
	}
	rewrite := d.bashRewrite(policy, o.ToolNetwork)
	opts.Transport = cmd
	if rewrite != nil {
		opts.Hooks = map[string][]claude.HookMatcher{"PreToolUse": {{Matcher: "Bash", Hooks: []claude.HookFunc{rewrite.hook}}}}
	}
	return opts, cmd, rewrite, nil
}

func (d *Driver) logger() *slog.Logger {
	if d.cfg.Logger != nil {
		return d.cfg.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// stderr logs the CLI's stderr (at debug level: it can be chatty), so a
// CLI that fails to start or exits early says why in the runner's log.
func (d *Driver) stderr(sessionID string) func(string) {
	log := d.logger().With("session", sessionID)
	return func(line string) { log.Debug("claude stderr", "line", line) }
}

func (d *Driver) env(home string) map[string]string {
	env := make(map[string]string, len(d.cfg.Env)+1)
	for k, v := range d.cfg.Env {
		env[k] = v
	}
	env["HOME"] = home
	return env
}

// command builds the CLI's command line, wrapped in the sandbox if any.
func (d *Driver) command(opts *claude.Options, spec launchSpec, toolNetwork bool) (*transport.Command, *sandbox.Policy, error) {
	args, err := opts.CommandArgs()
	if err != nil {
		return nil, nil, err
	}
	cmd := &transport.Command{Path: d.cliPath, Args: args, Env: opts.CommandEnv(), Dir: opts.Cwd,
		ExitGrace: d.cfg.ShutdownGrace, Logger: d.cfg.Logger, Stderr: d.stderr(spec.SessionID), Launcher: &d.launcher}
	if d.cfg.Sandbox == nil {
		return cmd, nil, nil
	}
	// The sandbox's environment is the whole of the CLI's: the runner's
	// allowed variables plus what the SDK sets (entrypoint, SDK version).
	// Its Bash commands run in nested sandboxes (bashRewriter) unless the
	// session has tool network.
	policy := &sandbox.Policy{
		Workspace: spec.Workspace, Dir: opts.Cwd, Home: spec.Home, Hide: d.cfg.Sandbox.Hide,
		ReadOnly: append(slices.Clip(d.cfg.Sandbox.ReadOnly), agentproc.CLIDirs(d.cliPath, cmd.Env)...),
		Env:      agentproc.EnvMap(cmd.Env), Network: true, NestedSandboxes: !toolNetwork,
	}
	sc, err := policy.Wrap(d.cliPath, args)
	if err != nil {
		return nil, nil, err
	}
	agentproc.Run(cmd, sc)
	return cmd, policy, nil
}
