package agent

import (
	"encoding/json"
	"time"
)

// Kind says what an event reports.
type Kind string

// The event kinds. Item events carry an Item (started, completed) or a
// Delta; approval events an Approval or a Resolution.
const (
	KindSessionStarted    Kind = "session.started"
	KindSessionEnded      Kind = "session.ended"
	KindTurnStarted       Kind = "turn.started"
	KindTurnCompleted     Kind = "turn.completed"
	KindItemStarted       Kind = "item.started"
	KindItemDelta         Kind = "item.delta"
	KindItemCompleted     Kind = "item.completed"
	KindApprovalRequested Kind = "approval.requested"
	KindApprovalResolved  Kind = "approval.resolved"
	KindUsage             Kind = "usage"
	KindError             Kind = "error"
	// KindNative carries, in Raw, a piece of the agent's own output that
	// the model has no place for (a Claude Code keep-alive, a stream's
	// message_stop, a control line for a client that speaks the agent's
	// protocol), so the log holds everything the agent said, in order.
	KindNative Kind = "native"
)

// Kinds lists every event kind, in lifecycle order.
func Kinds() []Kind {
	return []Kind{
		KindSessionStarted, KindTurnStarted, KindItemStarted, KindItemDelta, KindItemCompleted,
		KindApprovalRequested, KindApprovalResolved, KindUsage, KindError, KindNative, KindTurnCompleted, KindSessionEnded,
	}
}

// MaxRawDepth is the deepest an event's Raw may nest: encoding/json's
// own limit (10,000) less room for the documents that carry a payload (an
// event; a protocol v1 frame in a batch), so any JSON decoder a client
// has reads them.
const MaxRawDepth = 9990

// Event is one record of a session's work. Seq numbers a session's events
// from 1; the runner's log assigns it, drivers leave it zero.
type Event struct {
	Seq       int64     `json:"seq,omitempty"`
	Kind      Kind      `json:"kind"`
	SessionID string    `json:"session_id,omitempty"`
	TurnID    string    `json:"turn_id,omitempty"`
	Time      time.Time `json:"time"`

	Session    *SessionInfo `json:"session,omitempty"`    // session.started, session.ended
	Turn       *TurnInfo    `json:"turn,omitempty"`       // turn.started, turn.completed
	Item       *Item        `json:"item,omitempty"`       // item.started, item.completed
	Delta      *Delta       `json:"delta,omitempty"`      // item.delta
	Approval   *Approval    `json:"approval,omitempty"`   // approval.requested
	Resolution *Resolution  `json:"resolution,omitempty"` // approval.resolved
	Usage      *Usage       `json:"usage,omitempty"`      // usage, and turn.completed's total
	Error      *Error       `json:"error,omitempty"`      // error, and a failed turn or session

	// Raw is the agent's own payload this event was mapped from (a
	// stream-json line, a JSON-RPC notification, an SSE event's data),
	// unchanged. Where one payload makes several events, the first of
	// them carries it. Events a driver makes up itself have none. It is
	// JSON nested at most MaxRawDepth deep: the session core checks that
	// before it logs the event, unless RawChecked says it is known.
	Raw json.RawMessage `json:"raw,omitempty"`
	// RawChecked says Raw is known to be JSON nested at most MaxRawDepth
	// deep: a driver whose parser validated the payload whole sets it,
	// and every event the core logged has it. Never encoded.
	RawChecked bool `json:"-"`

	// Logged is the event's JSON as the runner's log holds it, without
	// its seq (which the log gives it), when it came from a log: a reader
	// that writes events as JSON writes these bytes, numbered, instead of
	// encoding the event again. Never encoded itself.
	Logged []byte `json:"-"`
}

// SessionInfo describes a session as it starts or ends.
type SessionInfo struct {
	Agent string `json:"agent"` // the driver's name: claude, codex, opencode, mock
	// NativeID is the agent's own id for the conversation (Claude's
	// session id, Codex's thread id, OpenCode's session id): what a
	// resume names.
	NativeID string `json:"native_id,omitempty"`
	Model    string `json:"model,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
	// Reason says why a session ended: closed, exited, killed, failed,
	// or ReasonRestarted.
	Reason string `json:"reason,omitempty"`
}

// ReasonRestarted ends a session the runner left running when it
// stopped without a shutdown (a crash, kill -9): its agent went with the
// runner, its conversation lives on in the agent's own store, and a
// reopen continues it.
const ReasonRestarted = "restarted"

// ReasonRunnerLost ends a session whose runner stopped answering its
// fleet (it died, or lost its network): the fleet writes it once, for
// the runner that cannot.
const ReasonRunnerLost = "runner_lost"

// TurnStatus is how a turn ended.
type TurnStatus string

const (
	TurnCompleted   TurnStatus = "completed"
	TurnInterrupted TurnStatus = "interrupted"
	TurnFailed      TurnStatus = "failed"
)

// TurnInfo describes a turn as it starts (Status empty) or completes.
type TurnInfo struct {
	Status TurnStatus `json:"status,omitempty"`
	// RequestID is the id the client that sent the turn's prompt gave it
	// (Prompt.RequestID), on turn.started.
	RequestID string `json:"request_id,omitempty"`
	// Text is the turn's final answer, where the agent gives one.
	Text string `json:"text,omitempty"`
	// DurationMS is the turn's wall time as the agent measured it.
	DurationMS int64 `json:"duration_ms,omitempty"`
}

// Usage is what a turn cost. Costs are the agent's own figures; an agent
// that reports none leaves CostUSD zero.
type Usage struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int64   `json:"reasoning_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
}

// Error is a failure an agent or its driver reports. Code is stable and
// machine-readable; Message is for people.
type Error struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
	// Status is the model API's HTTP status, for api errors.
	Status int `json:"status,omitempty"`
	// Retrying says the agent goes on retrying by itself.
	Retrying bool `json:"retrying,omitempty"`
}

// ErrorCode classifies an Error.
type ErrorCode string

const (
	ErrorAPI         ErrorCode = "api_error"      // the model API failed
	ErrorAgentExit   ErrorCode = "agent_exited"   // the agent's process ended
	ErrorProtocol    ErrorCode = "protocol_error" // the agent said something the driver could not read
	ErrorTurnLimit   ErrorCode = "turn_limit"     // max turns, budget, or a turn timeout
	ErrorTool        ErrorCode = "tool_error"     // a tool failed in a way that ends the turn
	ErrorAgent       ErrorCode = "agent_error"    // any other failure the agent reports
	ErrorInterrupted ErrorCode = "interrupted"    // the turn was interrupted
	ErrorInternal    ErrorCode = "internal_error" // Tether itself failed (a bug: its log says more)
)
