package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/internal/gcfloor"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/fleet"
	"github.com/tetherhq/tether/server"
)

// serveLong is serve's help; the token rule comes from runner/auth.
func serveLong() string {
	return fmt.Sprintf(`Serve runs a runner: a long-lived server that runs agent sessions for remote
hosts, over WebSocket (protocol v1 at /sessions: Claude Code's own stream)
and HTTP (the sessions API at /v1: every agent through one event model),
one workspace directory per workspace id, inside a bubblewrap sandbox when
--sandbox=on. Relative paths are taken from the directory tether serve
starts in.

%s

Hosts authenticate with "Authorization: Bearer <token>". Tokens come from
TETHER_AUTH_TOKEN (or SIDECAR_AUTH_TOKEN), comma-separated for rotation, and
from --auth-token-file (one per line). A token is at least %d bytes, with no
spaces or control characters (openssl rand -hex 24 makes one).

Without a token configured, the runner listens only on loopback and makes
one: 64 hex digits in DATA/%s (mode 0600), kept for the next start
(remove the file for a new one). tether run --runner on this machine finds
it; other hosts send the file's content. Its log names the file, never the
token. A runner on loopback answers only requests for Host localhost,
127.0.0.0/8 or ::1, so a web page cannot reach it through a name rebound to
127.0.0.1.

API keys stay in the runner's environment (ANTHROPIC_API_KEY, OPENAI_API_KEY
and friends; nothing travels in a frame). With the sandbox on, agents get a
loopback proxy's address and a stand-in key instead, so no tool command can
read the real one.

SIGHUP: read the tokens again (the token file, or the generated token's file,
made anew if removed); connections of a token no longer there close at once.

SIGTERM or Ctrl-C: take no new sessions, nor turns of the sessions API
(/readyz answers 503), let the turns in progress finish up to
--shutdown-timeout (their clients can still follow them and answer their
approvals), interrupt the ones left, stop the agents, keep every workspace
and log consistent.`, agentsHelp("the runner"), auth.MinTokenLength, auth.GeneratedTokenFile)
}

// agentsHelp is the paragraph of serve's and daemon's help on the agents
// who (the runner, the daemon) offers, from the registry.
func agentsHelp(who string) string {
	return wrap(fmt.Sprintf("Agents: %s, each when its CLI is given (--cli NAME=PATH) or found on PATH, "+
		"and %s, always there. An agent whose CLI is missing or cannot be used is listed as unavailable, "+
		"with the reason, and %[3]s starts without it (its log says which agents it offers); a CLI "+
		"given with --cli that cannot be used stops it. Each agent gets %[3]s's own provider "+
		"configuration (Codex's config.toml, OpenCode's opencode.json) in its private home.",
		andList(agentTitles(false)), andList(agentTitles(true)), who), 78)
}

// wrap breaks text into lines of at most width characters, between words.
func wrap(text string, width int) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(text) {
		if i > 0 && line+1+len(word) > width {
			b.WriteByte('\n')
			line = 0
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}

// hangups delivers SIGHUP, the signal that reloads the hosts' tokens
// (systemd's ExecReload sends it), until stop, which waits for its
// goroutine to end.
func hangups() (reload <-chan struct{}, stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP)
	out, done := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-sigs:
			case <-done:
				return
			}
			select {
			case out <- struct{}{}:
			case <-done:
				return
			}
		}
	})
	return out, func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
	}
}

func newServeCmd() *cobra.Command {
	var cfg server.Config
	var sandbox, tokenFile, data, logFormat, logLevel string
	var clis []string
	var fleetCfg fleet.Config
	var heapFloor int64
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a runner: agent sessions for remote hosts over WebSocket",
		Long:  serveLong(),
		Example: `  tether serve                     # loopback, sandbox on, ./tether-data, a generated token
  tether run --runner ws://127.0.0.1:7420/sessions "hello"     # finds that token
  TETHER_AUTH_TOKEN=$(openssl rand -hex 24) tether serve --addr 0.0.0.0:7420 --data /var/lib/tether`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Sandbox, err = sandboxOn(sandbox); err != nil {
				return err
			}
			cfg.DataDir = data
			if cfg.CLIs, err = cliFlags(clis); err != nil {
				return err
			}
			cfg.Auth = auth.LoadOptions{File: tokenFile, Getenv: os.Getenv}
			if cfg.Fleet, err = fleetFlags(fleetCfg); err != nil {
				return err
			}
			logger, err := newLogger(os.Stderr, logFormat, logLevel)
			if err != nil {
				return err
			}
			cfg.Logger = logger
			defer gcfloor.Start(uint64(max(heapFloor, 0))).Stop()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var stopHangups func()
			cfg.ReloadTokens, stopHangups = hangups()
			defer stopHangups()
			if err := server.Run(ctx, cfg); err != nil {
				if errors.Is(err, server.ErrInvalidConfig) {
					return err // the command line's fault: a usage error
				}
				logger.Error("runner stopped", "err", err) // in the log's format: a JSON line under --log-format json
				return exitCode(1)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Addr, "addr", server.DefaultAddr, "listen `ADDRESS`")
	fl.StringVar(&cfg.WorkspaceRoot, "workspaces", "", "`DIR` holding one directory per workspace (default: DATA/workspaces)")
	fl.StringVar(&cfg.HomesRoot, "homes", "", "`DIR` holding each workspace's private agent home (default: DATA/homes); in a fleet, shared with --workspaces, a lost runner's sessions resume on another")
	fl.StringVar(&data, "data", "tether-data", "`DIR` for the event log, the agents' private homes and a generated token")
	fl.StringVar(&cfg.TLSCert, "tls-cert", "", "TLS certificate `FILE` (serves wss://)")
	fl.StringVar(&cfg.TLSKey, "tls-key", "", "TLS key `FILE`")
	fl.StringVar(&tokenFile, "auth-token-file", "", "`FILE` with bearer tokens, one per line")
	fl.DurationVar(&cfg.GracePeriod, "grace", 60*time.Second, "how long a session outlives its connection")
	fl.DurationVar(&cfg.ApprovalTimeout, "approval-timeout", 30*time.Minute,
		"how long an approval of the sessions API (/v1) waits for an answer before it is denied (0: until its session ends)")
	fl.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long turns in progress may run on after SIGTERM before they are interrupted")
	fl.IntVar(&cfg.MaxSessions, "max-sessions", 1000, "live sessions at most (0: no limit)")
	fl.IntVar(&cfg.MaxConnsPerToken, "max-conns-per-token", 100, "connections per token at most (0: no limit)")
	fl.Int64Var(&cfg.MaxFrameSize, "max-frame-size", 16<<20, "largest host frame in `BYTES`")
	fl.DurationVar(&cfg.LogCommitWindow, "log-commit-window", eventlog.DefaultFlushInterval,
		"how long the event log gathers frames into one commit (longer: fewer fsyncs, more frames lost with a crash)")
	fl.StringVar(&cfg.MetricsAddr, "metrics-addr", "",
		"serve /metrics on its own listener at `ADDRESS`, without a token (default: on --addr, behind the hosts' tokens)")
	fl.StringSliceVar(&fleetCfg.URLs, "nats", nil, "join a fleet on the NATS system with JetStream at `URL[,URL...]`")
	fl.StringVar(&fleetCfg.CredsFile, "nats-creds", "", "NATS credentials `FILE` for the fleet's connection")
	fl.StringVar(&fleetCfg.NodeConfig, "nats-config", "",
		"run an embedded NATS node from this nats-server configuration `FILE` and join the fleet through it (see docs/fleet.md)")
	fl.StringVar(&fleetCfg.Name, "runner-name", "", "this runner's `NAME` in the fleet (default: host and port)")
	defineAgentFlags(fl, &cfg, &clis, &sandbox)
	defineProcessFlags(fl, &logFormat, &logLevel, &heapFloor)
	return cmd
}

// fleetFlags is the fleet the flags ask for: nil without --nats or
// --nats-config.
func fleetFlags(c fleet.Config) (*fleet.Config, error) {
	if len(c.URLs) == 0 && c.NodeConfig == "" {
		if c.CredsFile != "" || c.Name != "" {
			return nil, fmt.Errorf("%w: --nats-creds and --runner-name need --nats or --nats-config", server.ErrInvalidConfig)
		}
		return nil, nil
	}
	return &c, nil
}
