package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/server"
)

const shimLong = `Shim serves the adapter-shim API for one agent: the HTTP endpoints
(/health, /spawn, /kill, /pause, /resume, /resolve, /checkpoint,
/inject-context, /update-brief) and WS /events a Project Tab backend drives
its agents through, one shim process per agent (docs/shim.md).

As the backend launches shims: the port is --port, else AGENT_PORT, else
9100; 0 picks a free port, and the first line on stdout is {"port":N}.
AGENT_BOOTSTRAP (JSON) is read at start: artifacts are uploaded to its
artifactUploadEndpoint. The agent works in --workspace (default: the
current directory) with the runner's own configuration and keys in its
environment; with --sandbox on, in bubblewrap as tether serve runs agents
(its workspace, its private home and the system only; keys behind a
loopback proxy).

Only the backend drives it: a request whose Host is not a loopback name or
the shim's own address, one from a web page (an Origin header, or
Sec-Fetch-Site other than none) and a body that is not application/json
are refused. With a token (TETHER_SHIM_TOKEN, or shimToken in
AGENT_BOOTSTRAP; 16 bytes at least) every request must carry it, as
Authorization: Bearer <token> (or ?token= on /events); --host beyond
loopback needs one (docs/shim.md, "Security").`

func newShimCmd() *cobra.Command {
	var agentKind, host, workspace, dataDir, cli, sandbox string
	var port int
	var useMock bool
	cmd := &cobra.Command{
		Use:   "shim",
		Short: "Serve the adapter-shim API (HTTP + WS /events) for one agent",
		Long:  shimLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if useMock {
				if cmd.Flags().Changed("agent") && agentKind != "mock" {
					return fmt.Errorf("--mock and --agent %s contradict each other", agentKind)
				}
				agentKind = "mock"
			}
			if !cmd.Flags().Changed("port") {
				port = 9100
				if v := os.Getenv("AGENT_PORT"); v != "" {
					n, err := strconv.Atoi(v)
					if err != nil || n < 0 || n > 65535 {
						return fmt.Errorf("AGENT_PORT %q is not a port", v)
					}
					port = n
				}
			}
			if workspace == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				workspace = wd
			}
			sandboxed, err := sandboxOn(sandbox)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err = server.RunShim(ctx, server.ShimConfig{Agent: agentKind, Host: host, Port: port, Workspace: workspace,
				DataDir: dataDir, CLI: cli, Sandbox: sandboxed, Bootstrap: os.Getenv("AGENT_BOOTSTRAP"),
				Token: os.Getenv(shim.EnvToken), Announce: os.Stdout,
				Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			if err != nil {
				if errors.Is(err, server.ErrInvalidConfig) {
					return err
				}
				fmt.Fprintln(os.Stderr, "tether shim:", err)
				return exitCode(1)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agentKind, "agent", "claude", "the agent: "+orList(driver.Names()))
	f.BoolVar(&useMock, "mock", false, "the scripted mock agent (--agent mock)")
	f.IntVar(&port, "port", 9100, "port to listen on (default AGENT_PORT, else 9100; 0 picks a free port)")
	f.StringVar(&host, "host", "127.0.0.1", "host to listen on (beyond loopback only with a token: "+shim.EnvToken+")")
	f.StringVar(&workspace, "workspace", "", "the agent's working directory (default: the current directory)")
	f.StringVar(&dataDir, "data-dir", "", "where to keep the event log and approvals (default: a temporary directory)")
	f.StringVar(&cli, "cli", "", "the agent's CLI (default: its name on PATH)")
	f.StringVar(&sandbox, "sandbox", "off", "run the agent in bubblewrap as tether serve does: on or off")
	return cmd
}
