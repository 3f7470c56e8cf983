package opencode

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/internal/agentproc"
	"github.com/tetherhq/tether/transport"
)

// TestedVersion is the OpenCode release this driver is tested against
// (what `opencode --version` prints).
const TestedVersion = "1.18.33"

// DefaultStartTimeout bounds Start when driver.Config.StartTimeout is zero: the
// server takes one to three seconds to come up (it migrates its database
// on a first run).
const DefaultStartTimeout = 30 * time.Second

// versionTimeout bounds `opencode --version` in New.
const versionTimeout = 15 * time.Second

// Driver runs OpenCode sessions; it implements agent.Driver. Under
// driver.Config.Sandbox the commands OpenCode runs have no network (its shell is
// the sandbox's tool shell, sandbox.ToolShellPath) unless the policy's
// ToolNetwork lets a session ask for it (option tool_network). OpenCode
// retries a failing model API with no end, so a runner wants a
// driver.Config.TurnTimeout.
type Driver struct {
	cfg     driver.Config
	cli     string
	version string
	log     *slog.Logger
	now     func() time.Time
	// reconnectWait is the first wait before the event stream is opened
	// again (tests lengthen it to make the stream miss events).
	reconnectWait time.Duration
	// launcher starts every server from one shared thread and waits for
	// their exits and stderr together: a runner holds many idle agents,
	// and a thread and goroutines each would cost more than the rest of
	// an idle session.
	launcher transport.Launcher
	// calls is the HTTP transport of every session's calls: one per
	// session would cost its own state (and HTTP/2's) each time.
	calls *http.Transport
}

var _ agent.Driver = (*Driver)(nil)

var (
	// ErrServerNotReady: `opencode serve` did not say where it listens,
	// or did not answer its health check, in time.
	ErrServerNotReady = errors.New("opencode: server not ready")
	// ErrServerExited: `opencode serve` ended before it was ready.
	ErrServerExited = errors.New("opencode: server exited")
	// ErrInvalidRequest: a StartRequest the driver refuses (a bad model
	// name or options).
	ErrInvalidRequest = errors.New("opencode: invalid start request")
)

// New finds the CLI and checks its version, once. A missing CLI is an
// error matching driver.ErrCLINotFound, another version than
// TestedVersion a *driver.VersionError (unless AllowUntestedVersion).
func New(cfg driver.Config) (*Driver, error) {
	d := &Driver{cfg: cfg, log: cfg.Logger, now: cfg.Now, calls: newTransport()}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.cfg.StartTimeout <= 0 {
		d.cfg.StartTimeout = DefaultStartTimeout
	}
	cli, err := driver.LookPath(agentName, cmp.Or(cfg.CLIPath, agentName), cfg.Env)
	if err != nil {
		return nil, err
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
	if err := cfg.CheckVersion(agentName, version, TestedVersion); err != nil {
		return nil, err
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
	return agent.Capabilities{Resume: true, Fork: true, Diff: true, Questions: true, Images: true, Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeAlways},
		Modes: modes(), SetModel: true, MCP: mcpTransports()}
}

// modes are OpenCode's own primary agents, which a prompt names.
func modes() []agent.Mode {
	return []agent.Mode{
		{ID: "build", Name: "Build", Description: "works on the task with every tool the runner allows"},
		{ID: "plan", Name: "Plan", Description: "reads and plans; asks before any edit or command"},
	}
}
