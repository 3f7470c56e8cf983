// Command tether is the command line of Tether, a Go runtime for coding
// agents. `tether run PROMPT` runs one prompt through an agent (Claude
// Code, Codex, OpenCode or the built-in mock) and streams its work;
// `tether serve` runs a runner; `tether sessions`, `approvals`, `approve`,
// `deny` and `attach` drive a runner's sessions API.
//
// This package only parses flags; what the commands do lives in
// internal/cli and server.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/tetherhq/tether/internal/cli/runview"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/transport"
)

func main() {
	// `tether run --mock` starts this same executable as its agent CLI,
	// marked by mockclaude.EnvMain in the environment (see runview.UseMock).
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	// Orphans of agents' commands come back to tether, to be ended with
	// their agent where no cgroup is delegated (docs/processes.md).
	_, _ = transport.EnableSubreaper()
	os.Exit(execute(context.Background(), os.Args[1:]))
}

// exitCode carries a command's exit status out of cobra. Any other error
// cobra returns is about the command line: a usage error.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// codeErr turns an exit status into what a RunE returns.
func codeErr(code int) error {
	if code == runview.ExitOK {
		return nil
	}
	return exitCode(code)
}

func execute(ctx context.Context, args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	var code exitCode
	switch {
	case err == nil:
		return runview.ExitOK
	case errors.As(err, &code):
		return int(code)
	}
	fmt.Fprintf(os.Stderr, "tether: %v\n\n%s", err, cmd.UsageString())
	return runview.ExitUsage
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "tether",
		Short: "Tether runs coding agents (the Claude Code CLI) from Go",
		// execute prints errors with the usage of the command at fault.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(newRunCmd(), newServeCmd(), newVersionCmd(), newMockCmd(),
		newSessionsCmd(), newApprovalsCmd(), newApproveCmd(), newDenyCmd(), newAttachCmd(), newFleetCmd())
	root.AddCommand(newShimCmd(), newDaemonCmd(), newACPCmd())
	root.AddCommand(newRecoverCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	var cli string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print tether's version and the claude CLI's",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			runview.Version(cmd.Context(), cmd.OutOrStdout(), cli)
		},
	}
	cmd.Flags().StringVar(&cli, "cli", "", "the claude executable (default: found on PATH)")
	return cmd
}

// newMockCmd runs the mock agent by hand: `tether mock-claude -p hi`.
// `tether run --mock` does not go through it (see main).
func newMockCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "mock-claude [claude flags]",
		Short:              "Run the built-in mock of the claude CLI",
		Hidden:             true,
		DisableFlagParsing: true, // the flags are the mock's, as the claude CLI's
		RunE: func(_ *cobra.Command, args []string) error {
			// mockclaude.Main reads its argv from os.Args; give it only the
			// mock's own arguments. Nothing else runs after this.
			os.Args = append([]string{os.Args[0]}, args...)
			return codeErr(mockclaude.Main())
		},
	}
}
