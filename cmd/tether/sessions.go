package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/internal/cli/sessionscmd"
)

// defaultRunnerURL is where the sessions commands look for a runner.
const defaultRunnerURL = "http://127.0.0.1:7420"

// apiFlags are the flags every command against the sessions API takes.
type apiFlags struct {
	runner, token string
	json          bool
}

func (f *apiFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.runner, "runner", defaultRunnerURL, "the runner's `URL`")
	fl.StringVar(&f.token, "runner-token", "",
		"the runner's bearer `TOKEN` (default: $TETHER_AUTH_TOKEN, else the token a runner on this machine generated)")
	fl.BoolVar(&f.json, "json", false, "print JSON instead of text")
}

func (f *apiFlags) env(cmd *cobra.Command) sessionscmd.Env {
	token := runnerToken(f.token, f.runner, os.Getenv, cmd.ErrOrStderr())
	return sessionscmd.Env{Client: &client.Client{BaseURL: f.runner, Token: token},
		Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr(), JSON: f.json}
}

func newSessionsCmd() *cobra.Command {
	var f apiFlags
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List a runner's sessions (the sessions API)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return codeErr(sessionscmd.Sessions(cmd.Context(), f.env(cmd)))
		},
	}
	f.add(cmd)
	return cmd
}

func newApprovalsCmd() *cobra.Command {
	var f apiFlags
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List the approvals waiting for an answer on a runner, across sessions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return codeErr(sessionscmd.Approvals(cmd.Context(), f.env(cmd)))
		},
	}
	f.add(cmd)
	return cmd
}

func newApproveCmd() *cobra.Command {
	var f apiFlags
	var scope string
	cmd := &cobra.Command{
		Use:   "approve SESSION APPROVAL",
		Short: "Allow a tool use a session waits for (the first answer wins)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if scope != string(agent.ScopeOnce) && scope != string(agent.ScopeSession) && scope != string(agent.ScopeAlways) {
				return fmt.Errorf("--scope %q is not once, session or always", scope)
			}
			answer := client.Answer{Decision: agent.Allow, Scope: agent.Scope(scope)}
			return codeErr(sessionscmd.Resolve(cmd.Context(), f.env(cmd), args[0], args[1], answer))
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&scope, "scope", "once", "`once`, session (this and like calls for the rest of the session) or always")
	return cmd
}

func newDenyCmd() *cobra.Command {
	var f apiFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "deny SESSION APPROVAL",
		Short: "Refuse a tool use a session waits for (the first answer wins)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			answer := client.Answer{Decision: agent.Deny, Reason: reason}
			return codeErr(sessionscmd.Resolve(cmd.Context(), f.env(cmd), args[0], args[1], answer))
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "what the agent (and the model) is told")
	return cmd
}

func newAttachCmd() *cobra.Command {
	var f apiFlags
	var o sessionscmd.AttachOptions
	var watch bool
	cmd := &cobra.Command{
		Use:   "attach SESSION",
		Short: "Follow a session live and answer its approvals on this terminal",
		Long: "Follow a session on a runner live: its messages, commands, tool calls and approvals. On a\n" +
			"terminal each approval is asked (y allows); with --watch, or without a terminal, only shown.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.SessionID = args[0]
			if !watch && term.IsTerminal(int(os.Stdin.Fd())) {
				o.In = cmd.InOrStdin()
			}
			return codeErr(sessionscmd.Attach(cmd.Context(), f.env(cmd), o))
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.Prompt, "prompt", "", "start a turn with `TEXT` once attached")
	fl.BoolVar(&o.UntilTurnEnd, "until-turn-end", false, "return when the turn ends (its status is the exit status)")
	fl.BoolVar(&watch, "watch", false, "only watch: leave approvals to someone else")
	fl.Uint64Var(&o.After, "after", 0, "start after event `SEQ` (0: the whole session)")
	return cmd
}
