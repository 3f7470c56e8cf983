package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/internal/cli/runview"
	"github.com/tetherhq/tether/internal/cli/sessionscmd"
)

// runRemote runs one turn of a non-Claude agent on a runner, through its
// sessions API: a session in --workspace, the turn followed live, its
// approvals asked on a terminal or answered by --approve.
func (f *runFlags) runRemote(cmd *cobra.Command, args []string) error {
	approve, err := runview.ParseApprove(f.approve)
	if err != nil {
		return err
	}
	prompt, err := readPrompt(args)
	if err != nil {
		return err
	}
	images, err := runview.ReadImages(f.images)
	if err != nil {
		return err
	}
	base := apiBase(f.runner)
	token := runnerToken(f.runnerToken, base, os.Getenv, cmd.ErrOrStderr())
	e := sessionscmd.Env{Client: &client.Client{BaseURL: base, Token: token},
		Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr(), JSON: f.json}
	o := sessionscmd.RunOptions{Prompt: prompt, Images: images,
		Create: client.CreateRequest{Agent: f.agent, WorkspaceID: f.workspace, Model: f.model, Resume: f.resume}}
	switch {
	case approve == runview.ApproveAllow:
		o.Attach.Decide = agent.Allow
	case approve == runview.ApproveAsk && term.IsTerminal(int(os.Stdin.Fd())):
		o.Attach.In = cmd.InOrStdin()
	default: // deny, or nobody to ask
		o.Attach.Decide = agent.Deny
	}
	sigs, stop := interrupts()
	defer stop()
	o.Interrupts = sigs
	return codeErr(sessionscmd.Run(cmd.Context(), e, o))
}

// apiBase is the sessions API's base URL of a runner given as its
// protocol v1 URL (ws://host:7420/sessions) or its HTTP address.
func apiBase(runner string) string {
	u := strings.TrimSuffix(strings.TrimSuffix(runner, "/"), "/sessions")
	switch {
	case strings.HasPrefix(u, "ws://"):
		return "http://" + strings.TrimPrefix(u, "ws://")
	case strings.HasPrefix(u, "wss://"):
		return "https://" + strings.TrimPrefix(u, "wss://")
	}
	return u
}
