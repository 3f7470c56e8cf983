package runner

import (
	"context"
	"encoding/json"
)

// AgentSpec is what a driver needs to start an agent for a session.
type AgentSpec struct {
	SessionID string
	// Workspace is the directory the agent works in; Home its private
	// state directory (kept across sessions of the workspace).
	Workspace string
	Home      string
	// Options are the host's session options, validated by the driver.
	Options json.RawMessage
	// Resume restarts an earlier conversation (SessionID) rather than
	// starting a new one.
	Resume bool
	// Relay hands the agent's own protocol to the host: every output line
	// is an event, and Input writes raw lines to the agent.
	Relay bool
}

// AgentDriver starts agents.
type AgentDriver interface {
	// Validate checks session options before anything is started.
	Validate(opts json.RawMessage) error
	Start(ctx context.Context, spec AgentSpec) (Agent, error)
}

// Agent is one running agent. Next is called from one goroutine; the
// other methods may be called concurrently with it.
type Agent interface {
	// Next returns the agent's next output.
	Next(ctx context.Context) (Output, error)
	// Prompt starts a turn.
	Prompt(ctx context.Context, prompt json.RawMessage) error
	// Control sends a control request and returns the agent's answer.
	Control(ctx context.Context, subtype string, params json.RawMessage) (json.RawMessage, error)
	Interrupt(ctx context.Context) error
	// Input writes one raw line to the agent (relay sessions only).
	Input(ctx context.Context, line []byte) error
	// Close stops the agent and waits for it.
	Close() error
}

// Output is one line of agent output. TurnEnded marks the line that ends a
// turn (a result); TurnFailed says the turn ended in error.
type Output struct {
	Line       []byte
	TurnEnded  bool
	TurnFailed bool
}

// BatchAgent is an Agent that can hand over several outputs at once, so a
// burst of output is logged in one append. Front ends use it when an agent
// implements it.
type BatchAgent interface {
	Agent
	// NextBatch waits for output as Next does, then appends to dst what
	// the agent already holds, at most max outputs (at least one).
	NextBatch(ctx context.Context, dst []Output, max int) ([]Output, error)
}
