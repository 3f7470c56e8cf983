package mast

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The seven mast.* event types.
const (
	EventMessageCreated    = "mast.message.created"
	EventPartCreated       = "mast.message.part.created"
	EventPartUpdated       = "mast.message.part.updated"
	EventMessageCompleted  = "mast.message.completed"
	EventPermissionCreated = "mast.permission.created"
	EventPermissionUpdated = "mast.permission.updated"
	EventSessionUpdated    = "mast.session.updated"
	timestampLayout        = "2006-01-02T15:04:05.000000Z"
	epochTimestamp         = "1970-01-01T00:00:00.000Z"
	commandListSessions    = "list_sessions"
	commandCreateSession   = "create_session"
	commandSendPrompt      = "send_prompt"
	commandApprove         = "approve_permission"
	commandDeny            = "deny_permission"
	commandGetMessages     = "get_messages"
	commandGetDiff         = "get_diff"
	commandAbortSession    = "abort_session"
	frameSyncRequest       = "sync_request"
	frameHeartbeatAck      = "heartbeat_ack"
	framePairResponse      = "pair_response"
	statusOK               = "ok"
	statusError            = "error"
)

// Commands lists the eight semantic commands the orchestrator may send.
func Commands() []string {
	return []string{commandListSessions, commandCreateSession, commandSendPrompt, commandApprove,
		commandDeny, commandGetMessages, commandGetDiff, commandAbortSession}
}

// EventTypes lists the seven mast.* event types.
func EventTypes() []string {
	return []string{EventMessageCreated, EventPartCreated, EventPartUpdated, EventMessageCompleted,
		EventPermissionCreated, EventPermissionUpdated, EventSessionUpdated}
}

// Timestamp formats t as the protocol's ISO timestamps (UTC, microseconds:
// a JavaScript Date reads it, and the extra digits keep a burst of events
// in order).
func Timestamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

// ParseTimestamp reads an ISO timestamp of any precision.
func ParseTimestamp(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: timestamp %q: %w", ErrBadFrame, s, err)
	}
	return t, nil
}

// Command is one frame from the orchestrator: a semantic command or one
// of the infrastructure messages (sync_request, heartbeat_ack,
// pair_response). Fields a type does not use stay empty.
type Command struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	AgentType string `json:"agentType,omitempty"`
	Text      string `json:"text,omitempty"`
	// PermissionID names the approval of approve_permission and
	// deny_permission.
	PermissionID string `json:"permissionId,omitempty"`

	// sync_request
	CachedSessionIDs   []string `json:"cachedSessionIds,omitempty"`
	LastEventTimestamp string   `json:"lastEventTimestamp,omitempty"`

	// pair_response
	Success   bool   `json:"success,omitempty"`
	DeviceKey string `json:"deviceKey,omitempty"`
	Error     string `json:"error,omitempty"`
}

// ErrBadFrame matches a frame the daemon cannot read.
var ErrBadFrame = errors.New("mast: bad frame")

// ParseCommand reads one frame. A frame that is not a JSON object with a
// string type is an error matching ErrBadFrame; the returned Command
// still carries the requestId when one could be read, so the error can be
// answered.
func ParseCommand(data []byte) (Command, error) {
	var c Command
	if err := json.Unmarshal(data, &c); err == nil {
		if c.Type == "" {
			return c, fmt.Errorf("%w: no type", ErrBadFrame)
		}
		return c, nil
	}
	// Wrong types in some field: read what can be read, for the answer.
	var loose map[string]json.RawMessage
	if err := json.Unmarshal(data, &loose); err != nil {
		return Command{}, fmt.Errorf("%w: not a JSON object: %w", ErrBadFrame, err)
	}
	_ = json.Unmarshal(loose["requestId"], &c.RequestID)
	_ = json.Unmarshal(loose["type"], &c.Type)
	return Command{RequestID: c.RequestID, Type: c.Type}, fmt.Errorf("%w: fields of the wrong type", ErrBadFrame)
}

// Result is command_result: the one answer to a command.
type Result struct {
	Type      string `json:"type"` // command_result
	RequestID string `json:"requestId"`
	Status    string `json:"status"` // ok, error
	Data      any    `json:"data,omitempty"`
	Error     string `json:"error,omitempty"`
}

func okResult(requestID string, data any) Result {
	return Result{Type: "command_result", RequestID: requestID, Status: statusOK, Data: data}
}

func errResult(requestID string, err error) Result {
	return Result{Type: "command_result", RequestID: requestID, Status: statusError, Error: err.Error()}
}

// Status is the status frame: whether any agent is ready, and each.
type Status struct {
	Type       string        `json:"type"` // status
	AgentReady bool          `json:"agentReady"`
	Agents     []AgentStatus `json:"agents"`
}

// AgentStatus is one agent kind's readiness.
type AgentStatus struct {
	Type  string `json:"type"`
	Ready bool   `json:"ready"`
	// Reason says why an agent is not ready.
	Reason string `json:"reason,omitempty"`
}

// Event is one mast.* event as the event frame carries it.
type Event struct {
	Type      string         `json:"type"`
	SessionID string         `json:"sessionId"`
	Data      map[string]any `json:"data"`
}

// EventFrame is {type:"event", event, timestamp}.
type EventFrame struct {
	Type      string `json:"type"` // event
	Event     Event  `json:"event"`
	Timestamp string `json:"timestamp"`
}

// Heartbeat is the daemon's heartbeat frame.
type Heartbeat struct {
	Type      string `json:"type"` // heartbeat
	Timestamp string `json:"timestamp"`
}

// PairRequest is sent on the pairing socket.
type PairRequest struct {
	Type        string `json:"type"` // pair_request
	PairingCode string `json:"pairingCode"`
	Hostname    string `json:"hostname,omitempty"`
}

// Session is MastSession, the data of list_sessions and create_session.
type Session struct {
	ID        string `json:"id"`
	Title     string `json:"title,omitempty"`
	AgentType string `json:"agentType"`
	CreatedAt string `json:"createdAt"`
	// State is the canonical session's: idle, running, ended.
	State string `json:"state,omitempty"`
}

// Message is MastMessage: one message of a conversation with its parts.
type Message struct {
	ID        string `json:"id"`
	Role      string `json:"role"` // user, assistant
	Parts     []Part `json:"parts"`
	Completed bool   `json:"completed"`
}

// Part is one part of a message: one canonical item (or error), in the
// shape the seed's Claude adapter gives (text parts carry content,
// tool parts toolName, input and toolUseId), with the item's id, status
// and the rest of its fields.
type Part = map[string]any

// SyncSession is one session of sync_response.
type SyncSession struct {
	ID       string    `json:"id"`
	Messages []Message `json:"messages"`
}

// SyncResponse answers sync_request.
type SyncResponse struct {
	Type     string        `json:"type"` // sync_response
	Sessions []SyncSession `json:"sessions"`
}
