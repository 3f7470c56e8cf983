package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"

	"github.com/spf13/cobra"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/console"
)

// runFlags are `tether run`'s flags.
type runFlags struct {
	model, resume, cwd, permissionMode    string
	systemPrompt, appendSystemPrompt, cli string
	approve                               string
	runner, runnerToken, workspace        string
	allowedTools, disallowedTools         []string
	maxTurns                              int
	continueLast, json, mock, verbose     bool
}

const runLong = `Run sends PROMPT to the agent as one turn and streams its work: the
assistant's text as it arrives, one line per tool call and result, and a
summary line at the end. PROMPT "-" reads the prompt from stdin.

Tool approvals are asked on the terminal ([y]es once / [a]lways / [n]o);
when stdin is not a terminal, --approve=allow or --approve=deny decides.

Ctrl-C once interrupts the turn; twice quits.

Exit status: 0 the turn succeeded; 1 it failed, was interrupted, or could
not run; 2 the command line was wrong; 130 cancelled by a second Ctrl-C.`

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT",
		Short: "Run one prompt and stream the agent's work",
		Long:  runLong,
		Example: `  tether run --mock "hello"
  tether run --model sonnet --approve=allow "add a test for parseArgs"
  git diff | tether run --json --approve=deny -`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("missing PROMPT")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args) },
	}
	f.define(cmd)
	return cmd
}

func (f *runFlags) define(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "", "the `MODEL` (sonnet, opus, or a full model name)")
	fl.StringVar(&f.resume, "resume", "", "resume the session with this `ID`")
	fl.BoolVar(&f.continueLast, "continue", false, "continue the most recent session in the working directory")
	fl.StringVar(&f.cwd, "cwd", "", "the agent's working `DIR` (default: the current directory)")
	fl.StringVar(&f.permissionMode, "permission-mode", "", "`MODE`: default, acceptEdits, plan, bypassPermissions, dontAsk or auto")
	fl.StringSliceVar(&f.allowedTools, "allowed-tools", nil, "comma-separated `TOOLS` allowed without asking")
	fl.StringSliceVar(&f.disallowedTools, "disallowed-tools", nil, "comma-separated `TOOLS` the agent may not use")
	fl.StringVar(&f.systemPrompt, "system-prompt", "", "`TEXT` replacing Claude Code's system prompt")
	fl.StringVar(&f.appendSystemPrompt, "append-system-prompt", "", "`TEXT` appended to the system prompt")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "stop after `N` agent turns (0: no limit)")
	fl.StringVar(&f.cli, "cli", "", "`PATH` of the claude executable (default: looked up)")
	fl.BoolVar(&f.json, "json", false, "print each message's raw JSON line, nothing else, on stdout")
	fl.StringVar(&f.approve, "approve", string(console.ApproveAsk), "who approves tools: `ask`, allow or deny")
	fl.BoolVar(&f.mock, "mock", false, "use the built-in mock agent (no CLI or API key needed)")
	fl.BoolVar(&f.verbose, "verbose", false, "log the CLI's stderr and skipped output lines to stderr")
	fl.StringVar(&f.runner, "runner", "", "run on a runner at `URL` (ws://host:7420/sessions) instead of locally")
	fl.StringVar(&f.runnerToken, "runner-token", "", "bearer `TOKEN` for --runner (default: $TETHER_AUTH_TOKEN)")
	fl.StringVar(&f.workspace, "workspace", "default", "runner-side workspace `ID` for --runner")
	cmd.MarkFlagsMutuallyExclusive("continue", "resume")
	cmd.MarkFlagsMutuallyExclusive("mock", "cli")
	cmd.MarkFlagsMutuallyExclusive("mock", "runner")
	cmd.MarkFlagsMutuallyExclusive("cli", "runner")
	cmd.MarkFlagsMutuallyExclusive("cwd", "runner")
}

func (f *runFlags) run(cmd *cobra.Command, args []string) error {
	cfg, err := f.config(cmd)
	if err != nil {
		return err
	}
	cfg.Prompt, err = console.ReadPrompt(args, os.Stdin)
	if err != nil {
		if errors.Is(err, console.ErrEmptyPrompt) {
			return err
		}
		fmt.Fprintln(os.Stderr, "tether:", err)
		return exitCode(console.ExitFailed)
	}
	cfg, closeTTY := console.WithStdio(cfg)
	defer closeTTY()
	// Ctrl-C belongs to this command while it runs: console.Run turns the
	// first into an interrupt and the second into a cancel.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	cfg.Interrupts = sigs
	return codeErr(console.Run(cmd.Context(), cfg))
}

// config turns the flags into a console.Config. Its errors are usage
// errors, unless they are an exitCode.
func (f *runFlags) config(cmd *cobra.Command) (console.Config, error) {
	approve, err := console.ParseApprove(f.approve)
	if err != nil {
		return console.Config{}, err
	}
	opts, err := f.options(cmd)
	if err != nil {
		return console.Config{}, err
	}
	return console.Config{Options: opts, Approve: approve, JSON: f.json, Verbose: f.verbose}, nil
}

func (f *runFlags) options(cmd *cobra.Command) (claude.Options, error) {
	mode := claude.PermissionMode(f.permissionMode)
	if f.permissionMode != "" && !slices.Contains(permissionModes(), mode) {
		return claude.Options{}, fmt.Errorf("--permission-mode %q is not one of %v", f.permissionMode, permissionModes())
	}
	if f.maxTurns < 0 {
		return claude.Options{}, errors.New("--max-turns must not be negative")
	}
	opts := claude.Options{
		CLIPath: f.cli, Cwd: f.cwd, Model: f.model, PermissionMode: mode,
		AllowedTools: f.allowedTools, DisallowedTools: f.disallowedTools,
		AppendSystemPrompt: f.appendSystemPrompt, MaxTurns: f.maxTurns,
		Continue: f.continueLast, Resume: f.resume,
	}
	if cmd.Flags().Changed("system-prompt") {
		opts.SystemPrompt = &f.systemPrompt
	}
	if f.runner != "" {
		token := f.runnerToken
		if token == "" {
			token = os.Getenv("TETHER_AUTH_TOKEN")
		}
		opts.Runner = &claude.RunnerOptions{URL: f.runner, Token: token, WorkspaceID: f.workspace}
	}
	if f.mock {
		exe, err := os.Executable()
		if err != nil { // not the command line's fault
			fmt.Fprintln(os.Stderr, "tether: --mock: cannot find tether's own executable:", err)
			return claude.Options{}, exitCode(console.ExitFailed)
		}
		opts = console.UseMock(opts, exe)
	}
	return opts, nil
}

func permissionModes() []claude.PermissionMode {
	return []claude.PermissionMode{
		claude.PermissionDefault, claude.PermissionAcceptEdits, claude.PermissionPlan,
		claude.PermissionBypass, claude.PermissionDontAsk, claude.PermissionAuto,
	}
}
