// Package daemon assembles a `tether daemon` process: the runner core
// (server.OpenCore: sessions of every agent this machine has, found as
// `tether serve` finds them, with their durable event log and approvals
// under the data directory) and the Mast front end (frontend/mast),
// which dials out to an orchestrator. cmd/tether only parses flags into a
// Config and calls Run.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/tetherhq/tether/frontend/mast"
	"github.com/tetherhq/tether/server"
)

// ErrInvalidConfig matches a Config that Run refuses before it starts.
var ErrInvalidConfig = errors.New("daemon: invalid configuration")

// Config is everything `tether daemon` can be told.
type Config struct {
	// Orchestrator is the orchestrator's base URL (ws:// or wss://).
	Orchestrator string
	// DeviceKey is a key given outright; empty uses the one saved in
	// DataDir, pairing first when there is none.
	DeviceKey string
	// DataDir holds the sessions, their log and approvals, workspaces,
	// the agents' homes and the paired key.
	DataDir string
	// DefaultAgent is the agent of a create_session naming none.
	DefaultAgent string
	// Agents configures the agents as for `tether serve` (CLIs, sandbox,
	// environment, turn and approval timeouts); its DataDir is DataDir.
	Agents server.Config
	// HealthInterval is how often the agents' readiness is looked at;
	// 0: 30 s.
	HealthInterval time.Duration
	// ShutdownTimeout bounds the sessions' shutdown; 0: 30 s.
	ShutdownTimeout time.Duration
	// PairingOutput is where a pairing code is shown; nil: the log only.
	PairingOutput io.Writer
	Logger        *slog.Logger
	// OnConnect, if set, is called each time the orchestrator connection
	// opens.
	OnConnect func()
}

// KeyFileName is the paired key's file in the data directory.
const KeyFileName = "device-key.json"

// Run runs the daemon until ctx ends, then shuts its sessions down.
func Run(ctx context.Context, cfg Config) (err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.DataDir == "" {
		return fmt.Errorf("%w: a data directory is required", ErrInvalidConfig)
	}
	if cfg.Orchestrator == "" {
		return fmt.Errorf("%w: an orchestrator URL is required", ErrInvalidConfig)
	}
	agents := cfg.Agents
	agents.DataDir = cfg.DataDir
	core, err := server.OpenCore(agents, log)
	if err != nil {
		if errors.Is(err, server.ErrInvalidConfig) {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		return err
	}
	defer func() {
		timeout := cfg.ShutdownTimeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		sctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err = errors.Join(err, core.Close(sctx))
	}()
	var show func(string)
	if cfg.PairingOutput != nil {
		show = func(code string) {
			fmt.Fprintf(cfg.PairingOutput, "Pairing code: %s\nConfirm it in the app (or POST /pair/verify {\"code\":\"%s\"} on the orchestrator) within 5 minutes.\n", code, code)
		}
	}
	d, err := mast.New(mast.Config{
		Orchestrator: cfg.Orchestrator, DeviceKey: cfg.DeviceKey,
		KeyFile: filepath.Join(cfg.DataDir, KeyFileName), CursorFile: filepath.Join(cfg.DataDir, "mast-cursor.json"),
		Service: &mast.Service{Sessions: core.Sessions, DefaultAgent: cfg.DefaultAgent, Logger: log},
		Health:  core.AgentHealth, HealthInterval: cfg.HealthInterval,
		ShowPairingCode: show, Logger: log, OnConnect: cfg.OnConnect,
	})
	if err != nil {
		if errors.Is(err, mast.ErrConfig) {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		return err
	}
	log.Info("daemon starting", "orchestrator", cfg.Orchestrator, "agents", core.AgentKinds())
	return d.Run(ctx)
}
