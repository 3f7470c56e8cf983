package driver

import (
	"log/slog"
	"time"

	"github.com/tetherhq/tether/sandbox"
)

// Config is what every kind's driver is made from (Kind.New): the policy
// its sessions start under. A kind ignores the fields it has no use for.
type Config struct {
	// CLIPath is the executable; empty looks the kind's CLI up (see
	// Kind.FindCLI). A missing CLI fails New with an error matching
	// ErrCLINotFound.
	CLIPath string
	// Env is the whole environment of the CLI process (nil: this
	// process's). Model API keys live here and only here.
	Env []string
	// HomeFiles are written (mode 0600, parents 0700) under
	// agent.StartRequest.Home before each start, at their relative paths
	// (".codex/config.toml"): how the runner hands the agent its provider
	// configuration (see Kind.Provider). Ignored when Home is empty.
	HomeFiles map[string][]byte
	// Sandbox, when set, runs the CLI under bubblewrap with a copy of this
	// policy: the session's workspace, home and environment, the network
	// on (the agent reaches its model API). Hide, ReadOnly and ToolNetwork
	// are the runner's; New checks the sandbox can be made here (an error
	// matching sandbox.ErrUnavailable when not).
	Sandbox *sandbox.Policy
	// AllowUntestedVersion lets New accept a CLI whose version is not the
	// kind's TestedVersion (it logs a warning); without it New fails with
	// a *VersionError.
	AllowUntestedVersion bool
	// StartTimeout bounds a session's start (0: the driver's default).
	StartTimeout time.Duration
	// TurnTimeout interrupts a turn that runs longer, which then fails
	// with agent.ErrorTurnLimit; 0 means no limit.
	TurnTimeout time.Duration
	// InitializeTimeout bounds the CLI's initialize handshake and
	// ShutdownGrace its exit after stdin closes (Claude Code's; 0: the
	// SDK's defaults).
	InitializeTimeout time.Duration
	ShutdownGrace     time.Duration
	Logger            *slog.Logger
	// Now is the clock of the events; nil means time.Now.
	Now func() time.Time
}
