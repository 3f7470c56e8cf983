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
	// Native: a client may speak the agent's own protocol to it
	// (StartRequest.Native, NativeSession).
	Native bool `json:"native,omitempty"`
	// Scopes are the approval scopes an allow may take.
	Scopes []Scope `json:"scopes,omitempty"`
	// EditInput: an allow may change the call's input (Resolution.Input).
	EditInput bool `json:"edit_input,omitempty"`
	// Modes are the ways of working a session may be set to (the first
	// is the one it starts in); none means the agent has one.
	Modes []Mode `json:"modes,omitempty"`
	// SetModel: a running session's model may be changed; Models names
	// models to offer (the agent's provider may serve others).
	SetModel bool     `json:"set_model,omitempty"`
	Models   []string `json:"models,omitempty"`
	// Images: a prompt may carry images (Prompt.Images).
	Images bool `json:"images,omitempty"`
	// MCP are the transports of the MCP servers a session may be given
	// (StartRequest.MCPServers); none when it takes no MCP servers.
	MCP []MCPTransport `json:"mcp,omitempty"`
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
	// Mode is one of Capabilities.Modes to start in; empty is the first.
	Mode string
	// Options are agent-specific settings, checked by the driver.
	Options json.RawMessage
	// NativeID, for a new conversation, is the id to give it where the
	// agent lets its client choose (Claude Code's session id): a client
	// of the agent's own protocol then sees one id everywhere. Empty lets
	// the agent choose.
	NativeID string
	// Native starts a session whose client speaks the agent's own
	// protocol (Capabilities.Native): every line the agent writes is an
	// event's Raw (KindNative where the model has no place for it), and
	// the client's lines reach the agent through NativeSession.Input,
	// checked by the driver's policy.
	Native bool
	// Relay, with Native, is a client that speaks the protocol's control
	// side too: it answers the agent's requests and sends its own, and
	// the driver only checks its lines.
	Relay bool
	// Claim, when set, arbitrates an approval that the agent's own
	// protocol can answer too (a native client's answer): the driver
	// claims the client's answer before acting on it: Claim records it
	// and returns it as it stands, unless an answer came first, which it
	// returns in an *AlreadyResolvedError and the driver acts on instead.
	// Without Claim the driver's own record decides.
	Claim func(Resolution) (Resolution, error)
	// HostKeepsHistory says the host logs every event of the session and
	// answers Messages from that log (the runner's core does): a driver
	// that would keep the completed items in memory only for Messages
	// keeps none, and its Messages returns a *HistoryElsewhereError with
	// what the host's log cannot know.
	HostKeepsHistory bool
	// MCPServers are MCP servers the agent connects to for this session,
	// besides any the runner configures; a resumed session is given them
	// again. The driver checks them (CheckMCPServers) and refuses them all
	// when it takes none.
	MCPServers []MCPServer
}

// Prompt is a user turn's input.
type Prompt struct {
	Text string `json:"text"`
	// RequestID is the client's id for the turn: turn.started carries it.
	RequestID string `json:"request_id,omitempty"`
	// Native is the prompt in the agent's own form (a Claude Code user
	// message's content: a string or content blocks), for a client that
	// speaks it; Text then says what it reads as.
	Native json.RawMessage `json:"native,omitempty"`
	// Images go with the text where the agent takes them
	// (Capabilities.Images); a driver refuses them otherwise with an
	// *UnsupportedError, and refuses an image it cannot send with an
	// *InvalidImageError.
	Images []Image `json:"images,omitempty"`
}

// Batcher is a session that hands its events over in the batches they
// became ready in (optional: a reader of Events gets the same events one
// by one): a reader that logs them writes a batch at once.
type Batcher interface {
	EventBatches(ctx context.Context) iter.Seq2[[]Event, error]
}

// NativeSession is a session a native client drives (StartRequest.Native)
// besides its prompts: its lines go to the agent, and control requests of
// the agent's protocol are answered.
type NativeSession interface {
	// Input writes one line of the agent's protocol, as the driver's
	// policy allows it (a line it refuses is an error).
	Input(ctx context.Context, line []byte) error
	// Control sends a control request of the agent's protocol and
	// returns the agent's answer.
	Control(ctx context.Context, subtype string, params json.RawMessage) (json.RawMessage, error)
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
