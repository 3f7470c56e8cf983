package runview

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/mockclaude"
)

// Exit codes of Run and of the tether command.
const (
	ExitOK        = 0   // the turn succeeded
	ExitFailed    = 1   // the turn failed or was interrupted, or the session could not run
	ExitUsage     = 2   // the command line was wrong
	ExitCancelled = 130 // a second Ctrl-C cancelled everything (128 + SIGINT)
)

// Approve says who decides tool permissions the agent asks for.
type Approve string

const (
	// ApproveAsk asks the person on the terminal; off a terminal it denies
	// and says how to choose.
	ApproveAsk Approve = "ask"
	// ApproveAllow allows every tool.
	ApproveAllow Approve = "allow"
	// ApproveDeny denies every tool.
	ApproveDeny Approve = "deny"
)

// ParseApprove reads an --approve value.
func ParseApprove(s string) (Approve, error) {
	switch a := Approve(strings.ToLower(strings.TrimSpace(s))); a {
	case ApproveAsk, ApproveAllow, ApproveDeny:
		return a, nil
	}
	return "", fmt.Errorf("--approve must be ask, allow or deny, not %q", s)
}

// Config is one run: the session to start, the prompt, and the terminal.
type Config struct {
	// Options start the session of Claude Code through the SDK, when
	// Driver is nil. Run adds IncludePartialMessages and CanUseTool, and
	// with Verbose the logging hooks.
	Options claude.Options
	// Driver, when set, is the agent the run starts its session with
	// instead (any agent.Driver: the mock, Codex, OpenCode, Claude Code's
	// canonical driver), from Start; its events are shown as they come.
	Driver agent.Driver
	// Start is the session Driver starts: Workspace (the current
	// directory if empty), Resume, Model.
	Start  agent.StartRequest
	Prompt string
	// Images go with the prompt (see ReadImages).
	Images []agent.Image

	// Out gets the conversation (or, with JSON or Raw, only those lines); Err
	// gets the spinner, approval questions, notes and errors.
	Out, Err io.Writer
	// In is where answers to approval questions are read, one line each.
	// If it has SetReadDeadline (an *os.File on a terminal), a question
	// that is withdrawn stops waiting for the answer.
	In io.Reader
	// InTerminal: a person types into In, so ApproveAsk asks.
	InTerminal bool
	// OutTerminal: Out is a terminal, so text and spinner share the screen.
	OutTerminal bool
	// ErrTerminal: Err is a terminal, so the spinner is shown.
	ErrTerminal bool
	// Color enables ANSI styling (dim tool results, red errors).
	Color bool

	Approve Approve
	// AskEveryTool sends every tool call to Approve, the ones the CLI
	// would run without asking included (read-only commands, reading files
	// in its working directory, AllowedTools): see claude.AskEveryTool.
	AskEveryTool bool
	// JSON prints each canonical event (agent.Event, with the agent's
	// own payload in raw) as one line on Out and nothing else there. It
	// needs a Driver.
	JSON bool
	// Raw prints only the agent's own lines on Out: the CLI's stream-json
	// lines exactly (the SDK path), or each event's raw payload (a
	// Driver's).
	Raw bool
	// Verbose logs the CLI's stderr and skipped output lines to Err.
	Verbose bool

	// Interrupts delivers Ctrl-C presses: the first interrupts the turn,
	// the second cancels the run. nil means none.
	Interrupts <-chan os.Signal
	// Now is the clock for the duration in the summary; nil is time.Now.
	Now func() time.Time
	// SpinnerEvery is the spinner's frame interval; 0 means 80ms.
	SpinnerEvery time.Duration
}

func (c Config) withDefaults() Config {
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Err == nil {
		c.Err = io.Discard
	}
	if c.In == nil {
		c.In = strings.NewReader("")
	}
	if c.Approve == "" {
		c.Approve = ApproveAsk
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.SpinnerEvery <= 0 {
		c.SpinnerEvery = 80 * time.Millisecond
	}
	return c
}

// UseMock points opts at the built-in mock agent: the executable exe
// (tether itself, or a test binary) started with mockclaude.EnvMain=1 in its
// environment, which makes its main (or TestMain) run mockclaude.Main.
//
// An environment variable, not a subcommand name, marks the mock because
// the SDK builds argv with its own flags first (claude.Options.CommandArgs),
// so nothing we add can come before them.
func UseMock(opts claude.Options, exe string) claude.Options {
	opts.CLIPath = exe
	env := maps.Clone(opts.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[mockclaude.EnvMain] = "1"
	opts.Env = env
	return opts
}

// ErrEmptyPrompt is a prompt that is empty or only white space.
var ErrEmptyPrompt = errors.New("the prompt is empty")

// ReadPrompt returns the prompt given on the command line; "-" alone means
// read it from stdin.
func ReadPrompt(args []string, stdin io.Reader) (string, error) {
	prompt := strings.Join(args, " ")
	if len(args) == 1 && args[0] == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return "", ErrEmptyPrompt
	}
	return prompt, nil
}
