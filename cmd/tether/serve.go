package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/internal/gcfloor"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/server"
)

const serveLong = `Serve runs a runner: a long-lived server that runs agent sessions for remote
hosts over WebSocket (protocol v1 at /sessions), one workspace directory per
workspace id, inside a bubblewrap sandbox when --sandbox=on.

Hosts authenticate with "Authorization: Bearer <token>". Tokens come from
TETHER_AUTH_TOKEN (or SIDECAR_AUTH_TOKEN), comma-separated for rotation, and
from --auth-token-file (one per line). Without a token the runner only
listens on loopback. API keys stay in the runner's environment
(ANTHROPIC_API_KEY and friends are handed to the agents; nothing travels in a
frame).

SIGTERM or Ctrl-C: stop accepting, let turns finish up to --shutdown-timeout,
stop the agents, keep every workspace and log consistent.`

func newServeCmd() *cobra.Command {
	var cfg server.Config
	var sandbox, tokenFile, data string
	var heapFloor int64
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a runner: agent sessions for remote hosts over WebSocket",
		Long:  serveLong,
		Example: `  TETHER_AUTH_TOKEN=$(openssl rand -hex 24) tether serve --addr 0.0.0.0:7420 --sandbox on
  tether serve --workspaces ./ws --data ./data --sandbox off     # loopback, no token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch sandbox {
			case "on":
				cfg.Sandbox = true
			case "off":
			default:
				return fmt.Errorf("--sandbox must be on or off, not %q", sandbox)
			}
			if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
				return fmt.Errorf("--tls-cert and --tls-key go together")
			}
			cfg.DataDir = data
			if cfg.WorkspaceRoot == "" {
				cfg.WorkspaceRoot = filepath.Join(data, "workspaces")
			}
			cfg.Auth = auth.LoadOptions{File: tokenFile, Getenv: os.Getenv}
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
			defer gcfloor.Start(uint64(max(heapFloor, 0))).Stop()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := server.Run(ctx, cfg); err != nil {
				fmt.Fprintln(os.Stderr, "tether serve:", err)
				return exitCode(1)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Addr, "addr", server.DefaultAddr, "listen `ADDRESS`")
	fl.StringVar(&cfg.WorkspaceRoot, "workspaces", "", "`DIR` holding one directory per workspace (default: DATA/workspaces)")
	fl.StringVar(&data, "data", "tether-data", "`DIR` for the event log and the agents' private homes")
	fl.StringVar(&cfg.CLIPath, "cli", "", "`PATH` of the claude executable (default: looked up)")
	fl.StringVar(&cfg.TLSCert, "tls-cert", "", "TLS certificate `FILE` (serves wss://)")
	fl.StringVar(&cfg.TLSKey, "tls-key", "", "TLS key `FILE`")
	fl.StringVar(&sandbox, "sandbox", "on", "run agents under bubblewrap: `on` or off")
	fl.BoolVar(&cfg.AllowToolNetwork, "allow-tool-network", false, "let sessions ask for network in Bash commands")
	fl.StringSliceVar(&cfg.AgentEnv, "agent-env", nil, "extra environment `VARS` handed to agents")
	fl.StringVar(&tokenFile, "auth-token-file", "", "`FILE` with bearer tokens, one per line")
	fl.DurationVar(&cfg.GracePeriod, "grace", 60*time.Second, "how long a session outlives its connection")
	fl.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long turns may run on after SIGTERM")
	fl.IntVar(&cfg.MaxSessions, "max-sessions", 1000, "live sessions at most (0: no limit)")
	fl.IntVar(&cfg.MaxConnsPerToken, "max-conns-per-token", 100, "connections per token at most (0: no limit)")
	fl.Int64Var(&cfg.MaxFrameSize, "max-frame-size", 16<<20, "largest host frame in `BYTES`")
	fl.DurationVar(&cfg.LogCommitWindow, "log-commit-window", eventlog.DefaultFlushInterval,
		"how long the event log gathers frames into one commit (longer: fewer fsyncs, more frames lost with a crash)")
	fl.Int64Var(&heapFloor, "gc-heap-floor", 64<<20,
		"heap `BYTES` below which the Go collector does not run (fewer collections while relaying; 0 or GOGC set: off)")
	return cmd
}
