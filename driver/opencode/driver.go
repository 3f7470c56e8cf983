package opencode

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/internal/agentproc"
	"github.com/tetherhq/tether/sandbox"
)

// TestedVersion is the OpenCode release this driver is tested against
// (what `opencode --version` prints).
const TestedVersion = "1.18.33"

// DefaultStartTimeout bounds Start when Config.StartTimeout is zero: the
// server takes one to three seconds to come up (it migrates its database
// on a first run).
const DefaultStartTimeout = 30 * time.Second

// versionTimeout bounds `opencode --version` in New.
const versionTimeout = 15 * time.Second

// Config is what every session of a Driver starts with.
type Config struct {
	// CLIPath is the executable; empty looks the CLI up on PATH. A missing
	// CLI fails New with an error matching ErrCLINotFound.
	CLIPath string
	// Env is the whole environment of the CLI process (nil: this
	// process's). Model API keys live here and only here.
	Env []string
	// HomeFiles are written (mode 0600, parents 0700) under
	// StartRequest.Home before each start, at their relative paths (e.g.
	// ".config/opencode/opencode.json"): how the runner hands the agent its
	// provider configuration. Ignored when Home is empty.
	HomeFiles map[string][]byte
	// Sandbox, when set, runs the CLI under bubblewrap with a copy of this
	// policy: Workspace, Home and Env are the session's, and Network is on
	// (the agent must reach the model API and its own server's port). The
	// commands OpenCode runs have no network: its shell is the sandbox's
	// tool shell (sandbox.ToolShellPath). Its ToolNetwork lets a session
	// ask for network in them (option tool_network).
	Sandbox *sandbox.Policy
	// AllowUntestedVersion lets New accept a CLI whose --version is not
	// TestedVersion (it logs a warning); without it New fails with a
	// *VersionError.
	AllowUntestedVersion bool
	// StartTimeout is how long Start may take (default
	// DefaultStartTimeout).
	StartTimeout time.Duration
	// TurnTimeout is how long a turn may run before it is aborted and
	// fails with agent.ErrorTurnLimit (0: no limit). OpenCode retries a
	// failing model API with no end, so a runner wants one.
	TurnTimeout time.Duration
	Logger      *slog.Logger
	// Now is the clock of the events; nil means time.Now.
	Now func() time.Time
}

// Driver runs OpenCode sessions; it implements agent.Driver.
type Driver struct {
	cfg     Config
	cli     string
	version string
	log     *slog.Logger
	now     func() time.Time
	// reconnectWait is the first wait before the event stream is opened
	// again (tests lengthen it to make the stream miss events).
	reconnectWait time.Duration
}

var _ agent.Driver = (*Driver)(nil)

var (
	// ErrCLINotFound: the opencode executable is not there.
	ErrCLINotFound = errors.New("opencode: CLI not found")
	// ErrVersion matches a *VersionError.
	ErrVersion = errors.New("opencode: untested CLI version")
	// ErrServerNotReady: `opencode serve` did not say where it listens,
	// or did not answer its health check, in time.
	ErrServerNotReady = errors.New("opencode: server not ready")
	// ErrServerExited: `opencode serve` ended before it was ready.
	ErrServerExited = errors.New("opencode: server exited")
	// ErrInvalidRequest: a StartRequest the driver refuses (a bad model
	// name or options).
	ErrInvalidRequest = errors.New("opencode: invalid start request")
)

// VersionError is a CLI whose version is not the tested one.
type VersionError struct {
	Found  string
	Tested string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("opencode: CLI version %q is not the tested %q (set AllowUntestedVersion to use it anyway)", e.Found, e.Tested)
}

func (e *VersionError) Is(target error) bool { return target == ErrVersion }

// New finds the CLI and checks its version, once.
func New(cfg Config) (*Driver, error) {
	d := &Driver{cfg: cfg, log: cfg.Logger, now: cfg.Now}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.cfg.StartTimeout <= 0 {
		d.cfg.StartTimeout = DefaultStartTimeout
	}
	name := cfg.CLIPath
	if name == "" {
		name = agentName
	}
	cli, err := agentproc.FindCLI(name, cfg.Env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCLINotFound, err)
	}
	d.cli = cli
	if cfg.Sandbox != nil {
		if err := cfg.Sandbox.Available(); err != nil {
			return nil, fmt.Errorf("opencode: sandbox: %w", err)
		}
	}
	version, err := agentproc.Version(cli, cfg.Env, versionTimeout)
	if err != nil {
		return nil, fmt.Errorf("opencode: %w", err)
	}
	if fields := strings.Fields(version); len(fields) > 0 {
		version = fields[len(fields)-1] // "opencode 1.18.33" or "1.18.33"
	}
	d.version = version
	if version != TestedVersion {
		if !cfg.AllowUntestedVersion {
			return nil, &VersionError{Found: version, Tested: TestedVersion}
		}
		d.log.Warn("opencode: untested CLI version", "found", version, "tested", TestedVersion)
	}
	return d, nil
}

// Name is "opencode".
func (d *Driver) Name() string { return agentName }

// Version is what the CLI's --version said.
func (d *Driver) Version() string { return d.version }

// Capabilities: resume and fork by session id, the session's diff, and
// approvals allowed once or always (OpenCode keeps "always" for the rest of
// the server's life, which is the session's here).
func (d *Driver) Capabilities() agent.Capabilities {
	return agent.Capabilities{Resume: true, Fork: true, Diff: true, Questions: true, Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeAlways}}
}
