package claude

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tetherhq/tether/transport"
)

// PermissionMode values the CLI accepts.
type PermissionMode string

const (
	PermissionDefault     PermissionMode = "default"
	PermissionAcceptEdits PermissionMode = "acceptEdits"
	PermissionPlan        PermissionMode = "plan"
	PermissionBypass      PermissionMode = "bypassPermissions"
	PermissionDontAsk     PermissionMode = "dontAsk"
	PermissionAuto        PermissionMode = "auto"
)

// Thinking configures extended thinking. Type is "adaptive", "enabled" (with
// BudgetTokens) or "disabled".
type Thinking struct {
	Type         string
	BudgetTokens int
	Display      string
}

// Options configure a session. The zero value runs the CLI found on PATH
// with its defaults.
type Options struct {
	// CLIPath is the claude executable; empty means discover it.
	CLIPath string
	// Cwd is the directory the CLI works in. With a runner it is a
	// directory relative to the session's workspace ("src/app"), which
	// must exist there; an absolute path is refused.
	Cwd string
	// Env is added to the inherited environment (CLAUDECODE is always
	// removed so the CLI can run under another Claude Code session).
	Env map[string]string
	// ReplaceEnv makes Env the child's whole environment.
	ReplaceEnv bool

	Model              string
	FallbackModel      string
	SystemPrompt       *string // nil keeps Claude Code's own prompt
	SystemPromptFile   string
	AppendSystemPrompt string
	// Tools sets the base tool set; nil keeps the default, empty disables all.
	Tools           []string
	AllowedTools    []string
	DisallowedTools []string
	MaxTurns        int
	MaxBudgetUSD    float64
	PermissionMode  PermissionMode
	// PermissionPromptToolName routes permission prompts to an MCP tool.
	// It conflicts with CanUseTool, which uses the stdio control protocol.
	PermissionPromptToolName        string
	AllowDangerouslySkipPermissions bool

	Continue        bool
	Resume          string
	ForkSession     bool
	SessionID       string
	ResumeSessionAt string

	// MCPServers are external servers: name → config object as the CLI's
	// --mcp-config takes it ({"type":"stdio","command":…}).
	MCPServers map[string]json.RawMessage
	// SDKMCPServers run in this process; the model calls their tools as
	// mcp__<name>__<tool>.
	SDKMCPServers   map[string]*mcp.Server
	StrictMCPConfig bool

	Settings       string // path or JSON
	AddDirs        []string
	SettingSources []string // nil: no flag; empty: disable all sources
	Betas          []string
	PluginDirs     []string
	Agents         map[string]AgentDefinition
	Thinking       *Thinking
	Effort         string
	JSONSchema     json.RawMessage

	IncludePartialMessages  bool
	IncludeHookEvents       bool
	EnableFileCheckpointing bool
	// Bare runs the CLI in minimal mode (no CLAUDE.md discovery, plugins, …).
	Bare bool
	// ExtraArgs are appended verbatim (an escape hatch for new flags).
	ExtraArgs []string

	// CanUseTool decides tool permissions; setting it adds
	// --permission-prompt-tool stdio.
	CanUseTool PermissionFunc
	// Hooks maps a hook event (cc.HookPreToolUse, …) to matchers.
	Hooks map[string][]HookMatcher

	// Stderr receives each stderr line of the CLI. With a runner the
	// CLI's stderr stays in the runner's log; start-up failures still
	// carry its last lines in their error.
	Stderr func(line string)
	// OnMessage, when set, receives every message on the goroutine that
	// reads the CLI's output, in order, instead of Messages and Receive
	// (which then yield ErrPushedMessages), and nil once the output has
	// ended (Err says why). A host that maps each message as it comes
	// needs no goroutine of its own to receive them. While it runs, the
	// CLI's output is not read: it may wait (the CLI then waits too), but
	// not for a control call of this client (Interrupt, SetModel, …),
	// whose answer it would keep from being read.
	OnMessage func(Message)
	// OnLineError receives lines that were skipped: too long, not JSON.
	// The default logs them as warnings on Logger, or on slog.Default()
	// when Logger is nil: skipped output is never lost silently.
	OnLineError func(error)
	// MaxLineSize caps one stdout line (default 64 MiB).
	MaxLineSize int
	// ControlTimeout bounds each outbound control request (default 60 s).
	ControlTimeout time.Duration
	// DiscardServerInfo drops the CLI's answer to initialize (its
	// commands, agents and models, 10–20 KB) once it has been checked:
	// ServerInfo then returns the zero value. For a host that keeps many
	// idle clients and never asks for it, such as a runner.
	DiscardServerInfo bool
	// InitializeTimeout bounds the handshake (default: the larger of
	// CLAUDE_CODE_STREAM_CLOSE_TIMEOUT and 60 s).
	InitializeTimeout time.Duration
	// ShutdownGrace is how long Close lets the CLI exit by itself after
	// stdin closes before signalling it (default 5 s).
	ShutdownGrace time.Duration
	Logger        *slog.Logger

	// Runner runs the session on a runner instead of a local process.
	// Options the runner decides (CLIPath, Env, settings, …) are refused
	// with the reason; see RunnerOptions.
	Runner *RunnerOptions

	// Transport replaces the local process (a test pipe, a custom
	// transport). CLI discovery, argv and environment are then the
	// transport's affair.
	Transport transport.Transport
}

// PermissionFunc decides whether a tool may run.
type PermissionFunc func(ctx context.Context, req PermissionRequest) (PermissionResult, error)

func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// hasCallbacks reports whether the CLI may call back into this process, in
// which case stdin must stay open until the work is done.
func (o *Options) hasCallbacks() bool {
	return o.CanUseTool != nil || len(o.Hooks) > 0 || len(o.SDKMCPServers) > 0
}

// pinSessionID returns the session id known before the CLI starts and,
// for a new local session (or a fork) that has none, chooses one and
// sets SessionID so the CLI uses it: hosts can file the session away
// before its first message.
func (o *Options) pinSessionID() string {
	switch {
	case o.SessionID != "":
		return o.SessionID
	case o.Resume != "" && !o.ForkSession:
		return o.Resume
	case o.Transport != nil || o.Runner != nil || o.Continue || picksSession(o.ExtraArgs):
		return ""
	}
	o.SessionID = NewSessionID()
	return o.SessionID
}

// picksSession reports whether extra CLI arguments choose the session.
func picksSession(args []string) bool {
	for _, a := range args {
		flag, _, _ := strings.Cut(a, "=")
		switch flag {
		case "--session-id", "--resume", "-r", "--continue", "-c":
			return true
		}
	}
	return false
}

// NewSessionID returns a fresh session id: a random (version 4) UUID, the
// form the CLI's --session-id takes.
func NewSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
