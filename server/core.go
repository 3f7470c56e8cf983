package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/fleet"
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
	canonical
	stop func()
}

// OpenCore assembles the core from cfg's data, workspace, agent and
// approval settings (the listening and auth settings are not read). As
// a runner does, it offers the agents it has and lists the others as
// unavailable, with the reason.
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
	c := &Core{}
	if c.canonical, err = openCanonical(cfg, log, canonicalOptions{}); err != nil {
		return nil, err
	}
	c.Sessions = c.sessions
	c.stop = expireApprovals(c.Sessions, log)
	return c, nil
}

// canonical is what tether serve and tether daemon both open: the event
// log, the workspaces, the approvals and the sessions of every agent the
// runner has.
type canonical struct {
	log        *eventlog.Bolt
	approvals  *approvals.Store
	proxies    *keyProxies
	workspaces *workspace.Manager
	// clis are the CLIs the agents offered run, by kind.
	clis     map[string]string
	sessions *sessions.Manager
	// core is what the front ends serve: sessions, or in a fleet the
	// fleet's core over it (member).
	core   sessions.Core
	fleet  *fleet.Fleet
	member *fleet.Core
	logger *slog.Logger
}

// canonicalOptions are where the two differ.
type canonicalOptions struct {
	onCommit func(took time.Duration, events int, err error) // the event log's
	observer sessions.Observer
	fleet    *fleet.Config // join a fleet (tether serve)
}

// openCanonical opens the canonical core; on an error nothing is left
// open.
func openCanonical(cfg Config, log *slog.Logger, o canonicalOptions) (c canonical, err error) {
	c.proxies = newKeyProxies(log)
	c.logger = log
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if c.log, err = eventlog.Open(filepath.Join(cfg.DataDir, "events.db"), eventlog.Options{Logger: log,
		FlushInterval: cfg.LogCommitWindow, OnCommit: o.onCommit}); err != nil {
		return c, withRemedy(err, cfg.DataDir)
	}
	var elog eventlog.Log = c.log
	observer := o.observer
	if o.fleet != nil {
		fc := *o.fleet
		fc.Logger, fc.MaxSessions, fc.ResumeOptions = log, cfg.MaxSessions, resumeOptions
		if c.fleet, err = fleet.Open(context.Background(), fc); err != nil {
			return c, err
		}
		elog, observer = c.fleet.Log(c.log), c.fleet.Observer(observer)
	}
	if c.workspaces, err = workspace.New(cfg.WorkspaceRoot, workspace.Options{HomesRoot: cfg.HomesRoot}); err != nil {
		return c, err
	}
	if c.approvals, err = approvals.Open(filepath.Join(cfg.DataDir, "approvals.db"), nil); err != nil {
		return c, withRemedy(err, cfg.DataDir)
	}
	// Every agent under the same policy (CLI, environment, sandbox),
	// whichever front end opens its sessions: a workspace is one
	// session's at a time.
	offered, err := offerAgents(cfg, c.proxies, log)
	if err != nil {
		return c, err
	}
	c.clis = offered.clis
	c.sessions, err = sessions.New(sessions.Config{Drivers: offered.drivers, Unavailable: offered.unavailable,
		Workspaces: c.workspaces, Log: elog, Approvals: c.approvals, ApprovalTimeout: cfg.ApprovalTimeout, Logger: log,
		IndexDir: filepath.Join(cfg.DataDir, "sessions"), Observer: observer, MaxSessions: cfg.MaxSessions})
	if err != nil {
		return c, err
	}
	c.core = c.sessions
	if c.fleet != nil {
		if c.member, err = c.fleet.Serve(context.Background(), c.sessions); err != nil {
			return c, err
		}
		c.core = c.member
		log.Info("runner joined its fleet", "name", c.member.Name())
	}
	return c, nil
}

// resumeOptions are the start options of kind that continue a
// conversation of `turns` turns in another process, for the kinds that
// need them.
func resumeOptions(kind string, turns int) json.RawMessage {
	if k, ok := driver.Lookup(kind); ok && k.ResumeOptions != nil {
		return k.ResumeOptions(turns)
	}
	return nil
}

// withRemedy completes the error of a damaged event log or approvals
// store (one sentence: the file, what is wrong) with what the operator can
// do about it, the command as they would type it.
func withRemedy(err error, dataDir string) error {
	var damaged *eventlog.DamagedError // approvals.DamagedError too
	if errors.As(err, &damaged) {
		damaged.Remedy = fmt.Sprintf("tether cannot start on it: run `tether recover --data %s` to save what can be read of it into a new file (the damaged one is kept as it is)",
			shellQuote(dataDir))
	}
	return err
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// close releases what openCanonical opened (the sessions shut down first).
func (c canonical) close() {
	c.leaveFleet()
	if c.approvals != nil {
		c.approvals.Close()
	}
	c.proxies.Close()
	if c.log != nil {
		c.log.Close()
	}
}

// AgentHealth says, for every agent kind the core knows, whether it can
// start a session now: nil when it can, else why not. It looks again at
// every call (a CLI uninstalled or put back shows), so a caller may poll
// it to watch the agents' readiness.
func (c *Core) AgentHealth() map[string]error {
	out := map[string]error{}
	for kind := range c.Sessions.Agents() {
		out[kind] = nil
		if cli, ok := c.clis[kind]; ok { // a built-in kind has none
			out[kind] = cliReady(cli)
		}
	}
	for kind, why := range c.Sessions.Unavailable() {
		out[kind] = errors.New(why)
	}
	return out
}

// cliReady checks that a CLI (a path, or a name on PATH) is there to run:
// exec.LookPath checks a path with a slash for an executable file too.
func cliReady(path string) error {
	_, err := exec.LookPath(path)
	return err
}

// AgentKinds are the kinds AgentHealth reports, in the default order,
// without looking at their CLIs: every registered kind.
func (c *Core) AgentKinds() []string {
	var kinds []string
	offered, unavailable := c.Sessions.Agents(), c.Sessions.Unavailable()
	for _, name := range driver.Names() {
		if _, ok := offered[name]; ok || unavailable[name] != "" {
			kinds = append(kinds, name)
		}
	}
	return kinds
}

// Close stops gracefully: it takes no new sessions or turns, lets the
// turns in progress finish until ctx ends (then interrupts the ones
// left), ends the sessions and releases the log, the approvals and the
// key proxies.
func (c *Core) Close(ctx context.Context) error {
	c.Sessions.Drain(ctx)
	stop, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	err := c.Sessions.Shutdown(stop)
	c.close()
	return err
}

func (c *Core) close() {
	if c.stop != nil {
		c.stop()
	}
	c.canonical.close()
}

// leaveFleet hands what the runner logged to the fleet and leaves it
// (nothing without one). It is called once the sessions have ended.
func (c canonical) leaveFleet() {
	if c.member != nil {
		leave, cancel := context.WithTimeout(context.Background(), stopTimeout)
		if err := c.member.Leave(leave); err != nil {
			c.logger.Warn("leaving the fleet", "err", err)
		}
		cancel()
	}
	if c.fleet != nil {
		c.fleet.Close()
	}
}
