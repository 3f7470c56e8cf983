package main

import (
	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/internal/cli/sessionscmd"
)

func newFleetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Look at and steer a fleet of runners (tether serve --nats or --nats-config)",
	}
	var status apiFlags
	statusCmd := &cobra.Command{
		Use:   "status",
		Short: "List the fleet's runners: state, sessions, load, agents",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return codeErr(sessionscmd.FleetStatus(cmd.Context(), status.env(cmd)))
		},
	}
	status.add(statusCmd)
	var drain apiFlags
	var undo bool
	drainCmd := &cobra.Command{
		Use:   "drain NAME",
		Short: "Stop new sessions going to runner NAME while its sessions finish (for a rolling deploy)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return codeErr(sessionscmd.Drain(cmd.Context(), drain.env(cmd), args[0], undo))
		},
	}
	drain.add(drainCmd)
	drainCmd.Flags().BoolVar(&undo, "undo", false, "let new sessions go to the runner again")
	cmd.AddCommand(statusCmd, drainCmd)
	return cmd
}
