package server

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// Core is the canonical runner core without any front end or listener:
// the sessions of every agent the runner's configuration offers (the same
// discovery as `tether serve`), their durable event log and approvals.
// It is what a process with a front end of its own assembles (tether
// daemon). Close releases it after Sessions has shut down.
type Core struct {
	Sessions *sessions.Manager
	cfg      Config
	log      *eventlog.Log
	store    *approvals.Store
	proxies  *keyProxies
	stop     func()
}

// OpenCore assembles the core from cfg's data, workspace, agent and
// approval settings (the listening and auth settings are not read).
func OpenCore(cfg Config, log *slog.Logger) (_ *Core, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg, err = cfg.resolved(); err != nil {
		return nil, err
	}
	if err := makeDirs(cfg); err != nil {
		return nil, err
	}
	c := &Core{cfg: cfg, proxies: newKeyProxies(cfg.Sandbox, log)}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if c.log, err = eventlog.Open(filepath.Join(cfg.DataDir, "events.db"), eventlog.Options{Logger: log, FlushInterval: cfg.LogCommitWindow}); err != nil {
		return nil, err
	}
	ws, err := workspace.New(cfg.WorkspaceRoot, workspace.Options{HomesRoot: filepath.Join(cfg.DataDir, "homes")})
	if err != nil {
		return nil, err
	}
	claudeEnv, err := claudeProvider(agentEnv("claude", os.Environ(), cfg.AgentEnv), c.proxies)
	if err != nil {
		return nil, err
	}
	// Unlike a runner, a daemon runs without Claude Code when its CLI is
	// not installed (and was not named): its other agents still serve.
	drv, err := claudecli.New(driverConfig(cfg, claudeEnv.env, log))
	claudeMissing := ""
	if err != nil {
		if cfg.CLIPath != "" {
			return nil, err
		}
		claudeMissing, drv = err.Error(), &claudecli.Driver{}
	}
	if c.store, err = approvals.Open(filepath.Join(cfg.DataDir, "approvals.db"), nil); err != nil {
		return nil, err
	}
	drivers, unavailable, err := canonicalDrivers(cfg, drv, c.proxies, log)
	if err != nil {
		return nil, err
	}
	if claudeMissing != "" {
		delete(drivers, "claude")
		unavailable["claude"] = claudeMissing
	}
	if c.Sessions, err = sessions.New(sessions.Config{Drivers: drivers, Unavailable: unavailable,
		Workspaces: ws, Log: c.log, Approvals: c.store, ApprovalTimeout: cfg.ApprovalTimeout, Logger: log,
		IndexDir: filepath.Join(cfg.DataDir, "sessions")}); err != nil {
		return nil, err
	}
	c.stop = expireApprovals(c.Sessions, log)
	return c, nil
}

// AgentHealth says, for every agent kind the core knows, whether it can
// start a session now: nil when it can, else why not. It looks again at
// every call (a CLI uninstalled or put back shows), so a caller may poll
// it to watch the agents' readiness.
func (c *Core) AgentHealth() map[string]error {
	out := map[string]error{}
	for kind := range c.Sessions.Agents() {
		if kind == "mock" {
			out[kind] = nil
			continue
		}
		path, _ := c.cfg.cliFor(kind)
		if kind == "claude" && c.cfg.CLIPath != "" {
			path = c.cfg.CLIPath
		}
		out[kind] = cliReady(path)
	}
	for kind, why := range c.Sessions.Unavailable() {
		out[kind] = fmt.Errorf("%s", why)
	}
	return out
}

// cliReady checks that a CLI (a path, or a name on PATH) is there to run:
// exec.LookPath checks a path with a slash for an executable file too.
func cliReady(path string) error {
	_, err := exec.LookPath(path)
	return err
}

// AgentKinds are the kinds AgentHealth reports, sorted, without looking
// at their CLIs.
func (c *Core) AgentKinds() []string {
	kinds := slices.Collect(maps.Keys(c.Sessions.Agents()))
	for kind := range c.Sessions.Unavailable() {
		kinds = append(kinds, kind)
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// Close shuts the sessions down (waiting up to ctx) and releases the
// log, the approvals and the key proxies.
func (c *Core) Close(ctx context.Context) error {
	err := c.Sessions.Shutdown(ctx)
	c.close()
	return err
}

func (c *Core) close() {
	if c.stop != nil {
		c.stop()
	}
	if c.store != nil {
		c.store.Close()
	}
	c.proxies.Close()
	if c.log != nil {
		c.log.Close()
	}
}
