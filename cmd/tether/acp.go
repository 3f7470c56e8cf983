package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/frontend/acp"
	"github.com/tetherhq/tether/server"
)

const acpLong = `Acp speaks the Agent Client Protocol (ACP v1) on stdin and stdout: an
editor (Zed, a JetBrains IDE, Neovim) launches it as its agent. Behind it
runs any Tether agent, here or on a runner (--runner URL), with its
approvals asked in the editor. Nothing but JSON-RPC is written to stdout;
logs go to stderr. docs/acp.md says how to configure editors, and what
maps.

Locally the sessions are kept in --data-dir, so an editor started again
lists and loads them. A session's cwd is a workspace: one tether acp
serves the workspaces of one parent directory.`

func newACPCmd() *cobra.Command {
	var agentKind, runner, runnerTok, dataDir, cli, logLevel string
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Serve an agent to an editor over the Agent Client Protocol (stdio)",
		Long:  acpLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg := acp.Config{Agent: agentKind, Version: tetherVersion(), Logger: log}
			if runner != "" {
				return serveACPRemote(ctx, cfg, runner, runnerTok)
			}
			local, err := server.OpenACP(server.ACPConfig{Agent: agentKind, CLI: cli, DataDir: dataDir, Logger: log})
			if err != nil {
				return err
			}
			cfg.Capabilities = local.Capabilities()
			cfg.Open = func(ctx context.Context, root string) (acp.Core, error) { return local.Open(ctx, root) }
			err = acp.Serve(ctx, cfg, os.Stdin, os.Stdout)
			closeCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if cerr := local.Close(closeCtx); err == nil && cerr != nil {
				log.Warn("tether acp: closing", "err", cerr)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&agentKind, "agent", "claude", "the agent: "+orList(driver.Names()))
	f.StringVar(&runner, "runner", "", "run the agent on this runner (its sessions API `URL`) instead of here")
	f.StringVar(&runnerTok, "runner-token", "", "bearer `TOKEN` for --runner (default: $TETHER_AUTH_TOKEN, then the token a runner on this machine generated)")
	f.StringVar(&dataDir, "data-dir", "", "where local sessions are kept (default: $XDG_STATE_HOME/tether/acp, else ~/.local/state/tether/acp)")
	f.StringVar(&cli, "cli", "", "the agent's CLI (default: its name on PATH)")
	f.StringVar(&logLevel, "log-level", "warn", "stderr log level: debug, info, warn or error")
	return cmd
}

// serveACPRemote serves the editor from a runner's sessions.
func serveACPRemote(ctx context.Context, cfg acp.Config, runner, flagToken string) error {
	base := apiBase(runner)
	c := &client.Client{BaseURL: base, Token: runnerToken(flagToken, base, os.Getenv, os.Stderr)}
	agents, err := c.Agents(ctx)
	if err != nil {
		return fmt.Errorf("runner %s: %w", base, err)
	}
	caps, ok := agents[cfg.Agent]
	if !ok {
		return fmt.Errorf("runner %s does not offer the agent %q", base, cfg.Agent)
	}
	core := acp.NewRemoteCore(c)
	cfg.Capabilities = caps
	cfg.Open = func(context.Context, string) (acp.Core, error) { return core, nil }
	return acp.Serve(ctx, cfg, os.Stdin, os.Stdout)
}

// tetherVersion is the module's version as built ("(devel)" from a
// checkout).
func tetherVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
