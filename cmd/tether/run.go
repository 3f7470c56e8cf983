package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/internal/cli/runview"
)

// runFlags are `tether run`'s flags.
type runFlags struct {
	model, resume, cwd, permissionMode    string
	systemPrompt, appendSystemPrompt, cli string
	approve, agent                        string
	runner, runnerToken, workspace        string
	allowedTools, disallowedTools, images []string
	maxTurns                              int
	continueLast, json, raw, mock         bool
	verbose, askEveryTool                 bool
}

// claudeAgent is the default agent, and the one whose own options the
// Claude-only flags set: tether run drives its CLI itself, for the
// terminal view and --raw. Every other kind of the registry runs as its
// driver.
const claudeAgent = "claude"

// newDriver is a kind's driver for a run on this machine: the CLI --cli
// names (else the kind's own), the user's own environment and
// configuration. Another version than the tested one runs with a
// warning: the user chose it.
func (f *runFlags) newDriver(k driver.Kind) (agent.Driver, error) {
	return k.New(driver.Config{CLIPath: f.cli, AllowUntestedVersion: true, Logger: warnings()})
}

// warnings logs warnings and worse to stderr.
func warnings() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// claudeOnly are the flags only Claude Code takes.
func claudeOnly() []string {
	return []string{"permission-mode", "allowed-tools", "disallowed-tools", "system-prompt", "append-system-prompt",
		"max-turns", "continue", "mock", "ask-every-tool", "verbose"}
}

// runLong is run's help; the agents come from the registry.
func runLong() string {
	return `Run sends PROMPT to the agent as one turn and streams its work: the
assistant's text as it arrives, one line per tool call and result, and a
summary line at the end. PROMPT "-" reads the prompt from stdin.

` + agentHelp() + `

--runner runs the agent on a runner instead: Claude Code through protocol
v1 (--workspace, --cwd inside it), the other agents through the runner's
sessions API (a session in --workspace, closed after the turn). The runner
uses its own CLIs, configuration and keys.

--json prints every event of the session as one JSON line (the canonical
agent.Event of docs/events.md, the agent's own payload in "raw") and
nothing else; --raw prints only the agent's own lines (Claude Code's
stream-json lines, exactly as the CLI wrote them).

Tool approvals are asked on the terminal ([y]es once / [a]lways / [n]o);
when stdin is not a terminal, --approve=allow or --approve=deny decides.
Only the calls the CLI asks about reach the approver: in the default
permission mode the CLI runs read-only commands (echo, pwd, ls of the
working directory), reads files in its working directory and uses the
--allowed-tools without asking, so --approve=deny does not stop those
(on a sandboxed runner every Bash call asks: the CLI judges the sandboxed
command). --ask-every-tool sends every tool call to the approver; with
--approve=deny nothing runs.

Ctrl-C (or SIGTERM) once interrupts the turn and prints the summary; twice
quits.

Exit status: 0 the turn succeeded; 1 it failed, was interrupted, or could
not run; 2 the command line was wrong; 130 cancelled by a second Ctrl-C.`
}

// agentHelp is the paragraph of run's help on --agent.
func agentHelp() string {
	var each []string
	for _, k := range driver.Kinds() {
		about := k.About
		if k.Name == claudeAgent {
			about += ", the default"
		}
		each = append(each, k.Name+" ("+about+")")
	}
	return wrap("--agent picks the agent: "+orList(each)+". Locally, every agent starts in the working directory "+
		"with the user's own configuration (Codex's ~/.codex, OpenCode's ~/.config/opencode), as it would "+
		"without tether; --resume takes the agent's own session id.", 76)
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT",
		Short: "Run one prompt and stream the agent's work",
		Long:  runLong(),
		Example: `  tether run --mock "hello"
  tether run --agent mock "hello REQUEST_APPROVAL"
  tether run --agent codex --approve=allow "fix the failing test"
  tether run --agent opencode --runner ws://127.0.0.1:7420/sessions --workspace demo "hello"
  tether run --model sonnet --approve=allow "add a test for parseArgs"
  git diff | tether run --json --approve=deny -`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := checkConflicts(cmd); err != nil {
				return err
			}
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
	fl.StringVar(&f.agent, "agent", claudeAgent, "the `AGENT`: "+orList(driver.Names()))
	fl.StringVar(&f.model, "model", "", "the `MODEL` (sonnet, opus, or a full model name)")
	fl.StringVar(&f.resume, "resume", "", "resume the session with this `ID`")
	fl.BoolVar(&f.continueLast, "continue", false, "continue the most recent session in the working directory")
	fl.StringVar(&f.cwd, "cwd", "", "the agent's working `DIR` (default: the current directory; with --runner, a directory inside the workspace, relative to it)")
	fl.StringVar(&f.permissionMode, "permission-mode", "", "`MODE`: default, acceptEdits, plan, bypassPermissions, dontAsk or auto")
	fl.StringSliceVar(&f.allowedTools, "allowed-tools", nil, "comma-separated `TOOLS` allowed without asking")
	fl.StringSliceVar(&f.disallowedTools, "disallowed-tools", nil, "comma-separated `TOOLS` the agent may not use")
	fl.StringArrayVar(&f.images, "image", nil, "an image `FILE` (PNG, JPEG, GIF or WebP) that goes with the prompt; repeat it for more")
	fl.StringVar(&f.systemPrompt, "system-prompt", "", "`TEXT` replacing Claude Code's system prompt")
	fl.StringVar(&f.appendSystemPrompt, "append-system-prompt", "", "`TEXT` appended to the system prompt")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "stop after `N` agent turns (0: no limit)")
	fl.StringVar(&f.cli, "cli", "", "`PATH` of the agent's executable (default: looked up)")
	fl.BoolVar(&f.json, "json", false, "print each canonical event as a JSON line (the agent's own payload in \"raw\"), nothing else, on stdout")
	fl.BoolVar(&f.raw, "raw", false, "print only the agent's own lines (Claude Code's stream-json lines), nothing else, on stdout")
	fl.StringVar(&f.approve, "approve", string(runview.ApproveAsk), "who approves the tool calls the CLI asks about: `ask`, allow or deny")
	fl.BoolVar(&f.askEveryTool, "ask-every-tool", false, "send every tool call to the approver, the ones the CLI deems safe included")
	fl.BoolVar(&f.mock, "mock", false, "use the built-in mock of the claude CLI (no CLI or API key needed)")
	fl.BoolVar(&f.verbose, "verbose", false, "log the CLI's stderr and skipped output lines to stderr")
	fl.StringVar(&f.runner, "runner", "", "run on a runner at `URL` (ws://host:7420/sessions; for agents but claude, its http:// address works too) instead of locally")
	fl.StringVar(&f.runnerToken, "runner-token", "", "bearer `TOKEN` for --runner (default: $TETHER_AUTH_TOKEN, then the token a runner on this machine generated)")
	fl.StringVar(&f.workspace, "workspace", "default", "runner-side workspace `ID` for --runner")
}

// flagConflict is two flags that cannot go together, and why, in the words
// a person reads (cobra's own message names flag groups).
type flagConflict struct{ a, b, why string }

func runConflicts() []flagConflict {
	return []flagConflict{
		{"continue", "resume", "--continue picks the most recent session, --resume names one: give one of them"},
		{"mock", "cli", "--mock runs the built-in mock agent, --cli names a real claude executable: give one of them"},
		{"mock", "runner", "--mock runs here with the built-in mock agent; a runner runs its own agents: drop one of them"},
		{"cli", "runner", "--cli names a program on this machine; a runner runs its own claude CLI (tether serve --cli): drop --cli"},
		{"json", "raw", "--json prints canonical events, --raw the agent's own lines: give one of them"},
	}
}

// checkConflicts refuses flags that cannot go together.
func checkConflicts(cmd *cobra.Command) error {
	for _, c := range runConflicts() {
		if cmd.Flags().Changed(c.a) && cmd.Flags().Changed(c.b) {
			return errors.New(c.why)
		}
	}
	name, _ := cmd.Flags().GetString("agent")
	k, ok := driver.Lookup(name)
	if !ok {
		return fmt.Errorf("--agent %q is not one of %s", name, strings.Join(driver.Names(), ", "))
	}
	if name == claudeAgent {
		return nil
	}
	for _, flag := range claudeOnly() {
		if cmd.Flags().Changed(flag) {
			return fmt.Errorf("--%s is for --agent claude only", flag)
		}
	}
	if k.Builtin() && cmd.Flags().Changed("cli") {
		return fmt.Errorf("--agent %s is built into tether: drop --cli", name)
	}
	if cmd.Flags().Changed("runner") && cmd.Flags().Changed("cwd") {
		return fmt.Errorf("--agent %s on a runner works in the workspace's own directory: drop --cwd", name)
	}
	if cmd.Flags().Changed("raw") && cmd.Flags().Changed("runner") {
		return errors.New("--raw prints the agent's own lines, which a runner's sessions API keeps inside its events: use --json")
	}
	return nil
}

func (f *runFlags) run(cmd *cobra.Command, args []string) error {
	oneThread()
	if f.agent != claudeAgent && f.runner != "" {
		return f.runRemote(cmd, args)
	}
	cfg, err := f.config(cmd)
	if err != nil {
		return err
	}
	if cfg.Prompt, err = readPrompt(args); err != nil {
		return err
	}
	if cfg.Images, err = runview.ReadImages(f.images); err != nil {
		return err
	}
	cfg, closeTTY := runview.WithStdio(cfg)
	defer closeTTY()
	sigs, stop := interrupts()
	defer stop()
	cfg.Interrupts = sigs
	return codeErr(runview.Run(cmd.Context(), cfg))
}

// oneThread runs Go code on one thread unless GOMAXPROCS says otherwise.
// A run relays one agent along a pipeline of goroutines (read and parse,
// map, print); with more threads each handoff wakes another one, which
// then spins for work on the core the agent itself needs. On one thread the
// handoffs are plain goroutine switches: 100,000 messages took 13–14% less
// CPU (most of it the kernel's) and 4–6% less time on two cores.
func oneThread() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}

// readPrompt is PROMPT, or stdin for "-". An empty one is the command
// line's fault; a prompt that could not be read is not.
func readPrompt(args []string) (string, error) {
	prompt, err := runview.ReadPrompt(args, os.Stdin)
	if err != nil && !errors.Is(err, runview.ErrEmptyPrompt) {
		fmt.Fprintln(os.Stderr, "tether:", err)
		return "", exitCode(runview.ExitFailed)
	}
	return prompt, err
}

// interrupts delivers Ctrl-C and SIGTERM to the run until stop: the
// first interrupts the turn, the second stops waiting. SIGTERM (a
// supervisor, a shell's kill) gets the same as Ctrl-C: the turn ends and
// the summary is printed.
func interrupts() (sigs <-chan os.Signal, stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

// config turns the flags into a runview.Config. Its errors are usage
// errors, unless they are an exitCode.
func (f *runFlags) config(cmd *cobra.Command) (runview.Config, error) {
	approve, err := runview.ParseApprove(f.approve)
	if err != nil {
		return runview.Config{}, err
	}
	cfg := runview.Config{Approve: approve, Raw: f.raw, JSON: f.json,
		Start: agent.StartRequest{Workspace: f.cwd, Resume: f.resume, Model: f.model}}
	if k, ok := driver.Lookup(f.agent); ok && k.Name != claudeAgent {
		cfg.Driver, err = f.newDriver(k)
		if err != nil { // not the command line's fault
			fmt.Fprintf(os.Stderr, "tether: --agent %s: %v\n", f.agent, err)
			return runview.Config{}, exitCode(runview.ExitFailed)
		}
		return cfg, nil
	}
	opts, err := f.options(cmd)
	if err != nil {
		return runview.Config{}, err
	}
	if f.json { // Claude Code through its canonical driver
		if f.askEveryTool {
			opts = runview.AskEveryTool(opts)
		}
		if f.verbose {
			opts = runview.Verbose(opts, os.Stderr)
		}
		cfg.Driver = &claudecli.Canonical{Base: opts}
		return cfg, nil
	}
	cfg.Options, cfg.AskEveryTool, cfg.Verbose = opts, f.askEveryTool, f.verbose
	return cfg, nil
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
		token := runnerToken(f.runnerToken, f.runner, os.Getenv, os.Stderr)
		opts.Runner = &claude.RunnerOptions{URL: f.runner, Token: token, WorkspaceID: f.workspace}
	}
	if f.mock {
		exe, err := os.Executable()
		if err != nil { // not the command line's fault
			fmt.Fprintln(os.Stderr, "tether: --mock: cannot find tether's own executable:", err)
			return claude.Options{}, exitCode(runview.ExitFailed)
		}
		opts = runview.UseMock(opts, exe)
	}
	return opts, nil
}

func permissionModes() []claude.PermissionMode {
	return []claude.PermissionMode{
		claude.PermissionDefault, claude.PermissionAcceptEdits, claude.PermissionPlan,
		claude.PermissionBypass, claude.PermissionDontAsk, claude.PermissionAuto,
	}
}
