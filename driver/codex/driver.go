package codex

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/internal/agentproc"
	"github.com/tetherhq/tether/transport"
)

// Name is the agent kind this driver runs.
const Name = "codex"

// TestedVersion is what `codex --version` prints for the CLI this driver
// is tested against.
const TestedVersion = "codex-cli 0.169.0"

// DefaultStartTimeout bounds Start when driver.Config.StartTimeout is zero.
const DefaultStartTimeout = 30 * time.Second

// versionTimeout bounds `codex --version` in New.
const versionTimeout = 30 * time.Second

// ErrInvalidOptions: StartRequest.Options or Fork without Resume.
var ErrInvalidOptions = errors.New("codex: invalid start options")

// Driver starts Codex sessions over `codex app-server`.
type Driver struct {
	cfg     driver.Config
	cliPath string
	version string
	// launcher starts every app-server from one shared thread and waits
	// for their exits and stderr together: a runner holds many idle
	// agents, and a thread and goroutines each would cost more than the
	// rest of an idle session.
	launcher transport.Launcher
}

var _ agent.Driver = (*Driver)(nil)

// New finds the CLI and checks its version, once. A missing CLI is an
// error matching driver.ErrCLINotFound, another version than
// TestedVersion a *driver.VersionError (unless AllowUntestedVersion).
func New(cfg driver.Config) (*Driver, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	path, err := driver.LookPath(Name, cmp.Or(cfg.CLIPath, Name), cfg.Env)
	if err != nil {
		return nil, err
	}
	version, err := agentproc.Version(path, cfg.Env, versionTimeout)
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	if err := cfg.CheckVersion(Name, version, TestedVersion); err != nil {
		return nil, err
	}
	if cfg.Sandbox != nil {
		if err := cfg.Sandbox.Available(); err != nil {
			return nil, fmt.Errorf("codex: sandbox: %w", err)
		}
	}
	return &Driver{cfg: cfg, cliPath: path, version: version}, nil
}

// Name is "codex".
func (d *Driver) Name() string { return Name }

// Capabilities: resume and fork by thread id, steering, the session's
// diff, questions (request_user_input, MCP elicitations); approvals allow
// once or for the session.
func (d *Driver) Capabilities() agent.Capabilities {
	return agent.Capabilities{Resume: true, Fork: true, Steer: true, Diff: true, Questions: true, Images: true,
		Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeSession}, SetModel: true, MCP: mcpTransports()}
}

// Version is what the CLI's --version printed.
func (d *Driver) Version() string { return d.version }

// Start starts `codex app-server` and a thread on it: a new one, or
// req.Resume's (forked into a new one with req.Fork). ctx and
// driver.Config.StartTimeout bound the start; the session lives until Close.
func (d *Driver) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	if req.Fork && req.Resume == "" {
		return nil, fmt.Errorf("%w: fork needs the thread to fork (StartRequest.Resume)", ErrInvalidOptions)
	}
	if o := strings.TrimSpace(string(req.Options)); o != "" && o != "null" && o != "{}" {
		return nil, fmt.Errorf("%w: codex takes no agent options, got %s", ErrInvalidOptions, o)
	}
	if err := agent.CheckMCPServers(Name, mcpTransports(), req.MCPServers); err != nil {
		return nil, err
	}
	if req.Home != "" {
		if err := agentproc.WriteHomeFiles(req.Home, d.cfg.HomeFiles); err != nil {
			return nil, fmt.Errorf("codex: %w", err)
		}
	}
	env, err := d.environ(req.Home)
	if err != nil {
		return nil, err
	}
	cmd, err := d.command(req, env)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StartTimeout)
	defer cancel()
	return start(ctx, d, cmd, req)
}

// command is the app-server's command line, wrapped in the sandbox if any.
func (d *Driver) command(req agent.StartRequest, env []string) (*transport.Command, error) {
	args := []string{"app-server"}
	log := d.cfg.Logger
	cmd := &transport.Command{Path: d.cliPath, Args: args, Env: env, Dir: req.Workspace, Logger: log,
		Launcher: &d.launcher, ExitGrace: 2 * time.Second, TermGrace: 2 * time.Second,
		Stderr: func(line string) { log.Debug("codex stderr", "line", line) }}
	if d.cfg.Sandbox == nil {
		return cmd, nil
	}
	// Codex runs its commands in a sandbox of its own (workspace-write, no
	// network), built with bubblewrap: it needs to create namespaces.
	policy := *d.cfg.Sandbox
	policy.NestedSandboxes = true
	if err := agentproc.Sandbox(cmd, policy, req.Workspace, req.Home); err != nil {
		return nil, fmt.Errorf("codex: sandbox: %w", err)
	}
	return cmd, nil
}

// environ is the CLI's environment: Config.Env, and with a home, HOME and
// CODEX_HOME under it. Codex refuses to create its sandbox helper under the
// temporary directory, and its shell tool then fails; so a home inside
// TMPDIR gets a TMPDIR of its own (home/.tmp).
func (d *Driver) environ(home string) ([]string, error) {
	env := d.cfg.Env
	if env == nil {
		env = os.Environ()
	}
	env = append([]string(nil), env...)
	if home == "" {
		return env, nil
	}
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		return nil, fmt.Errorf("codex: home: %w", err)
	}
	env = agentproc.SetEnv(env, "HOME", home)
	env = agentproc.SetEnv(env, "CODEX_HOME", codexHome)
	tmp, ok := agentproc.LookupEnv(env, "TMPDIR")
	if !ok || tmp == "" {
		tmp = os.TempDir()
	}
	if d.cfg.Sandbox != nil {
		tmp = "/tmp" // the sandbox's own
	}
	if within(codexHome, tmp) {
		own := filepath.Join(home, ".tmp")
		if err := os.MkdirAll(own, 0o700); err != nil {
			return nil, fmt.Errorf("codex: home: %w", err)
		}
		env = agentproc.SetEnv(env, "TMPDIR", own)
	}
	return env, nil
}

func within(path, dir string) bool {
	dir = filepath.Clean(dir)
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}
