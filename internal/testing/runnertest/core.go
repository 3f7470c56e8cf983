// Package runnertest owns the in-process runner cores that tests and
// benchmarks start on a directory: its event log, approvals, workspaces,
// the Claude driver and the session core, laid out as `tether serve` lays
// them out; and the sessions API over a core with the drivers a test
// gives it.
package runnertest

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// Core is a session core and what it writes to.
type Core struct {
	Sessions  *sessions.Manager
	Log       *eventlog.Bolt
	Approvals *approvals.Store
}

// NewCore builds a core on dir (events.db, approvals.db, sessions/, ws/,
// homes/) with Claude Code under drv's policy and the mock; reusing a dir
// is a runner restart.
func NewCore(dir string, drv claudecli.Config) (*Core, error) {
	elog, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		return nil, err
	}
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), nil)
	if err != nil {
		return nil, errors.Join(err, elog.Close())
	}
	fail := func(err error) (*Core, error) { return nil, errors.Join(err, store.Close(), elog.Close()) }
	ws, err := workspace.New(filepath.Join(dir, "ws"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		return fail(err)
	}
	d, err := claudecli.New(drv)
	if err != nil {
		return fail(err)
	}
	m, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{"claude": d, "mock": mock.New(mock.Config{})},
		Workspaces: ws, Log: elog, Approvals: store, IndexDir: filepath.Join(dir, "sessions")})
	if err != nil {
		return fail(err)
	}
	return &Core{Sessions: m, Log: elog, Approvals: store}, nil
}

// Close shuts the sessions down, within ctx, and closes the files.
func (c *Core) Close(ctx context.Context) error {
	err := c.Sessions.Shutdown(ctx)
	return errors.Join(err, c.Approvals.Close(), c.Log.Close())
}
