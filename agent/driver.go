package agent

import (
	"context"
	"encoding/json"
	"iter"
)

// Capabilities are what an agent can do beyond prompting, interrupting and
// approvals, which every agent does. Clients read them to offer only what
// works; a method an agent lacks fails with an *UnsupportedError.
type Capabilities struct {
	Resume    bool `json:"resume"`    // continue a conversation by its native id
	Fork      bool `json:"fork"`      // start a new conversation from an old one
	Steer     bool `json:"steer"`     // add to a turn while it runs
	Pause     bool `json:"pause"`     // hold a session without ending it
	Rewind    bool `json:"rewind"`    // undo files to an earlier message
	Questions bool `json:"questions"` // ask the user to choose (question approvals)
	Diff      bool `json:"diff"`      // report the session's file changes
	// Scopes are the approval scopes an allow may take.
	Scopes []Scope `json:"scopes,omitempty"`
}

// Driver starts sessions of one agent kind.
type Driver interface {
	// Name is the agent kind: claude, codex, opencode, mock.
	Name() string
	Capabilities() Capabilities
	// Start starts (or resumes) a session. ctx bounds the start only; the
	// session lives until Close.
	Start(ctx context.Context, req StartRequest) (Session, error)
}

// StartRequest is what a session starts with.
type StartRequest struct {
	// Workspace is the directory the agent works in; Home is its private
	// state directory. Both exist.
	Workspace string
	Home      string
	// Resume names the agent's conversation to continue (NativeID of an
	// earlier session); with Fork, a new conversation starts from it.
	Resume string
	Fork   bool
	Model  string
	// Options are agent-specific settings, checked by the driver.
	Options json.RawMessage
}

// Prompt is a user turn's input.
type Prompt struct {
	Text string `json:"text"`
}

// Session is one running conversation with one agent. Events is read by
// one goroutine; the other methods may be called from any goroutine while
// it runs.
type Session interface {
	// NativeID is the agent's id for the conversation, once known.
	NativeID() string
	// Events yields the session's events until it ends, then stops; an
	// error ends the iteration. Events a driver has not yet handed over
	// wait for the reader (backpressure), they are never dropped.
	Events(ctx context.Context) iter.Seq2[Event, error]
	// Prompt starts a turn. A prompt while a turn runs is refused with
	// ErrTurnInProgress (Steer adds to a running turn).
	Prompt(ctx context.Context, p Prompt) error
	Steer(ctx context.Context, p Prompt) error
	Interrupt(ctx context.Context) error
	// Resolve answers one of the session's pending approvals.
	Resolve(ctx context.Context, r Resolution) error
	// Messages is the conversation so far, as completed items.
	Messages(ctx context.Context) ([]Item, error)
	// Diff is what the session changed in its workspace.
	Diff(ctx context.Context) ([]FileChange, error)
	// Close ends the session and everything it started, and waits.
	Close() error
}
