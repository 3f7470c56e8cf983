// Package runnertest owns the in-process runner cores that tests and
// benchmarks start on a directory: its event log, workspaces, the Claude
// driver and the runner, laid out as `tether serve` lays them out; and the
// sessions API over a sessions core with the drivers a test gives it.
package runnertest

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/runner"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/workspace"
)

// Core is a runner and the event log it writes.
type Core struct {
	Runner *runner.Runner
	Log    *eventlog.Log
}

// NewCore builds a core on dir (events.db, ws/, homes/); reusing a dir is a
// runner restart. A zero grace means the runner's default.
func NewCore(dir string, drv claudecli.Config, grace time.Duration) (*Core, error) {
	elog, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		return nil, err
	}
	ws, err := workspace.New(filepath.Join(dir, "ws"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		return nil, errors.Join(err, elog.Close())
	}
	d, err := claudecli.New(drv)
	if err != nil {
		return nil, errors.Join(err, elog.Close())
	}
	r, err := runner.New(runner.Config{Log: elog, Workspaces: ws, Driver: d, GracePeriod: grace})
	if err != nil {
		return nil, errors.Join(err, elog.Close())
	}
	return &Core{Runner: r, Log: elog}, nil
}
