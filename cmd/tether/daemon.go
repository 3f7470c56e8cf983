package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/daemon"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/internal/gcfloor"
)

// daemonLong is daemon's help.
func daemonLong() string {
	return `Daemon connects this machine's agents to a Mast orchestrator, so a phone can
drive them: it dials out (nothing listens here) to URL/daemon, says which
agents it has and whether each is ready, answers the orchestrator's commands
(list and create sessions, prompt, approve or deny a tool call, abort, read
messages and diffs) and streams every event as mast.* events. See
docs/daemon.md.

Without a device key (--device-key, TETHER_DEVICE_KEY, or one saved in
DATA/device-key.json) it pairs: it prints a six-digit code to confirm in the
app, then saves the key it is given (mode 0600). A saved key the orchestrator
refuses is removed and the daemon pairs again.

` + agentsHelp("the daemon") + `

Sessions, their events and approvals live in DATA and survive a restart: a
prompt to a session of an earlier run resumes its agent's own conversation.
Lost connections are retried with backoff; events are logged meanwhile and
reach the orchestrator when it is back.`
}

func newDaemonCmd() *cobra.Command {
	var cfg daemon.Config
	var sandbox, data, logFormat, logLevel string
	var clis []string
	var heapFloor int64
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Connect this machine's agents to a Mast orchestrator (drive them from a phone)",
		Long:  daemonLong(),
		Example: `  tether daemon --orchestrator wss://orchestrator.example.com      # pairs on first start
  MAST_ORCHESTRATOR_URL=ws://127.0.0.1:3000 TETHER_DEVICE_KEY=dk_… tether daemon --cli codex=/usr/local/bin/codex`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Agents.Sandbox, err = sandboxOn(sandbox); err != nil {
				return err
			}
			// From the environment here, not as the flags' defaults: help
			// would print a key.
			fromEnv := map[string]*string{"orchestrator": &cfg.Orchestrator, "device-key": &cfg.DeviceKey, "default-agent": &cfg.DefaultAgent}
			for flag, env := range map[string]string{"orchestrator": "MAST_ORCHESTRATOR_URL", "device-key": "TETHER_DEVICE_KEY", "default-agent": "MAST_DEFAULT_AGENT"} {
				if !cmd.Flags().Changed(flag) {
					*fromEnv[flag] = os.Getenv(env)
				}
			}
			if cfg.Orchestrator == "" {
				return errors.New("--orchestrator (or MAST_ORCHESTRATOR_URL) is required")
			}
			cfg.DataDir = data
			if cfg.Agents.CLIs, err = cliFlags(clis); err != nil {
				return err
			}
			cfg.PairingOutput = cmd.OutOrStdout()
			logger, err := newLogger(os.Stderr, logFormat, logLevel)
			if err != nil {
				return err
			}
			cfg.Logger = logger
			// Fewer collections while events stream: the daemon's tail
			// latency is mostly the collector's.
			defer gcfloor.Start(uint64(max(heapFloor, 0))).Stop()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := daemon.Run(ctx, cfg); err != nil {
				if errors.Is(err, daemon.ErrInvalidConfig) {
					return err
				}
				fmt.Fprintln(os.Stderr, "tether daemon:", err)
				return exitCode(1)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Orchestrator, "orchestrator", "",
		"the orchestrator's base `URL`, ws:// or wss:// (default: MAST_ORCHESTRATOR_URL)")
	fl.StringVar(&cfg.DeviceKey, "device-key", "",
		"the device `KEY` (default: TETHER_DEVICE_KEY, else the one saved in DATA, else pair)")
	fl.StringVar(&data, "data", "tether-daemon-data", "`DIR` for sessions, their event log, workspaces and the paired key")
	fl.StringVar(&cfg.DefaultAgent, "default-agent", "",
		"the agent `KIND` of a session created without one (default: MAST_DEFAULT_AGENT, else the first there of "+strings.Join(driver.Names(), ", ")+")")
	fl.StringVar(&cfg.Agents.WorkspaceRoot, "workspaces", "", "`DIR` holding one directory per session's workspace (default: DATA/workspaces)")
	fl.DurationVar(&cfg.Agents.ApprovalTimeout, "approval-timeout", 30*time.Minute,
		"how long a permission waits for the phone before it is denied (0: until its session ends)")
	fl.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long turns in progress may run on after SIGTERM before they are interrupted")
	defineAgentFlags(fl, &cfg.Agents, &clis, &sandbox)
	defineProcessFlags(fl, &logFormat, &logLevel, &heapFloor)
	return cmd
}
