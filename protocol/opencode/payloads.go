package opencode

import (
	"encoding/json"
	"fmt"
)

// ServerConnected is the first event of every GET /event stream.
type ServerConnected struct{}

// ServerHeartbeat comes every 10 s on an otherwise quiet stream.
type ServerHeartbeat struct{}

// InstanceDisposed says the server dropped the instance (directory) the
// stream belongs to; the server ends the stream after it.
type InstanceDisposed struct {
	Directory string `json:"directory"`
}

// GlobalDisposed says the server disposed of every instance.
type GlobalDisposed struct{}

// SessionCreated carries a new session's info.
type SessionCreated struct {
	SessionID string  `json:"sessionID"`
	Info      Session `json:"info"`
}

// SessionUpdated carries a session's info after a change (title, tokens,
// cost, summary, time.updated).
type SessionUpdated struct {
	SessionID string  `json:"sessionID"`
	Info      Session `json:"info"`
}

// SessionDeleted carries a deleted session's last info.
type SessionDeleted struct {
	SessionID string  `json:"sessionID"`
	Info      Session `json:"info"`
}

// SessionStatusChanged is session.status: the session went busy, idle or
// into a retry. Busy comes several times in one turn (once per step).
type SessionStatusChanged struct {
	SessionID string        `json:"sessionID"`
	Status    SessionStatus `json:"status"`
}

// SessionIdle says the session finished its work: the end of a turn,
// including an aborted or failed one.
type SessionIdle struct {
	SessionID string `json:"sessionID"`
}

// SessionDiff is the session's file changes so far.
type SessionDiff struct {
	SessionID string     `json:"sessionID"`
	Diff      []FileDiff `json:"diff"`
}

// SessionError is an error of a session's turn: an abort
// (MessageAbortedError), a model API error, a provider's auth error, ….
// SessionID may be empty for an error not tied to a session.
type SessionError struct {
	SessionID string      `json:"sessionID,omitempty"`
	Error     *NamedError `json:"error,omitempty"`
}

// SessionCompacted says the session's history was compacted.
type SessionCompacted struct {
	SessionID string `json:"sessionID"`
}

// MessageUpdated carries a message's info each time it changes: created,
// tokens and cost after each step, completed with finish or error.
type MessageUpdated struct {
	SessionID string  `json:"sessionID"`
	Info      Message `json:"info"`
}

// MessageRemoved says a message was deleted (a revert, say).
type MessageRemoved struct {
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
}

// MessagePartUpdated carries a part whole, each time it changes. Time is
// when it was sent.
type MessagePartUpdated struct {
	SessionID string `json:"sessionID"`
	Part      Part   `json:"part"`
	Time      Millis `json:"time"`
}

func (m *MessagePartUpdated) UnmarshalJSON(data []byte) error {
	var w struct {
		SessionID string          `json:"sessionID"`
		Part      json.RawMessage `json:"part"`
		Time      Millis          `json:"time"`
	}
	if err := decode(data, &w); err != nil {
		return err
	}
	*m = MessagePartUpdated{SessionID: w.SessionID, Time: w.Time}
	if w.Part == nil || string(w.Part) == "null" {
		return nil
	}
	p, err := decodePart(w.Part)
	if err != nil {
		return err
	}
	m.Part = p
	return nil
}

// MessagePartDelta appends Delta to the field Field ("text") of a part that
// message.part.updated announced.
type MessagePartDelta struct {
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	PartID    string `json:"partID"`
	Field     string `json:"field"`
	Delta     string `json:"delta"`
}

// MessagePartRemoved says a part was deleted.
type MessagePartRemoved struct {
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	PartID    string `json:"partID"`
}

// PermissionRequest is a tool call waiting for permission: permission.asked
// carries it and GET /permission lists the pending ones. Answer it with
// POST /permission/{ID}/reply.
type PermissionRequest struct {
	ID         string          `json:"id"` // "per_…"
	SessionID  string          `json:"sessionID"`
	Permission string          `json:"permission"` // the tool's permission: bash, edit, webfetch, …
	Patterns   []string        `json:"patterns"`   // what is asked for: the command, the paths
	Metadata   json.RawMessage `json:"metadata"`   // the tool's details: bash gives {"command"}
	Always     []string        `json:"always"`     // the patterns an "always" reply allows from then on
	Tool       *PermissionTool `json:"tool,omitempty"`
}

// PermissionTool is the tool call a permission request is for.
type PermissionTool struct {
	MessageID string `json:"messageID"`
	CallID    string `json:"callID"` // the ToolPart's CallID
}

// PermissionAsked is permission.asked.
type PermissionAsked struct {
	PermissionRequest
}

// PermissionReplied says how a permission request was answered (by any
// client).
type PermissionReplied struct {
	SessionID string          `json:"sessionID"`
	RequestID string          `json:"requestID"`
	Reply     PermissionReply `json:"reply"`
}

// QuestionRequest is the question tool asking the user: question.asked
// carries it and GET /question lists the pending ones. Answer it with POST
// /question/{ID}/reply or /reject.
type QuestionRequest struct {
	ID        string          `json:"id"` // "que_…"
	SessionID string          `json:"sessionID"`
	Questions []QuestionInfo  `json:"questions"`
	Tool      *PermissionTool `json:"tool,omitempty"`
}

// QuestionInfo is one question and its choices.
type QuestionInfo struct {
	Question string           `json:"question"`
	Header   string           `json:"header"` // a short label
	Options  []QuestionOption `json:"options"`
	Multiple bool             `json:"multiple,omitempty"` // more than one choice allowed
	Custom   bool             `json:"custom,omitempty"`   // a typed answer allowed
}

// QuestionOption is one choice.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// QuestionAsked is question.asked.
type QuestionAsked struct {
	QuestionRequest
}

// QuestionReplied carries the answers: one list of chosen labels per
// question.
type QuestionReplied struct {
	SessionID string     `json:"sessionID"`
	RequestID string     `json:"requestID"`
	Answers   [][]string `json:"answers"`
}

// QuestionRejected says the user declined to answer.
type QuestionRejected struct {
	SessionID string `json:"sessionID"`
	RequestID string `json:"requestID"`
}

// TodoUpdated carries the session's whole todo list.
type TodoUpdated struct {
	SessionID string `json:"sessionID"`
	Todos     []Todo `json:"todos"`
}

// FileEdited says a tool edited a file.
type FileEdited struct {
	File string `json:"file"`
}

func (*ServerConnected) EventType() string      { return EventServerConnected }
func (*ServerHeartbeat) EventType() string      { return EventServerHeartbeat }
func (*InstanceDisposed) EventType() string     { return EventInstanceDisposed }
func (*GlobalDisposed) EventType() string       { return EventGlobalDisposed }
func (*SessionCreated) EventType() string       { return EventSessionCreated }
func (*SessionUpdated) EventType() string       { return EventSessionUpdated }
func (*SessionDeleted) EventType() string       { return EventSessionDeleted }
func (*SessionStatusChanged) EventType() string { return EventSessionStatus }
func (*SessionIdle) EventType() string          { return EventSessionIdle }
func (*SessionDiff) EventType() string          { return EventSessionDiff }
func (*SessionError) EventType() string         { return EventSessionError }
func (*SessionCompacted) EventType() string     { return EventSessionCompacted }
func (*MessageUpdated) EventType() string       { return EventMessageUpdated }
func (*MessageRemoved) EventType() string       { return EventMessageRemoved }
func (*MessagePartUpdated) EventType() string   { return EventMessagePartUpdated }
func (*MessagePartDelta) EventType() string     { return EventMessagePartDelta }
func (*MessagePartRemoved) EventType() string   { return EventMessagePartRemoved }
func (*PermissionAsked) EventType() string      { return EventPermissionAsked }
func (*PermissionReplied) EventType() string    { return EventPermissionReplied }
func (*QuestionAsked) EventType() string        { return EventQuestionAsked }
func (*QuestionReplied) EventType() string      { return EventQuestionReplied }
func (*QuestionRejected) EventType() string     { return EventQuestionRejected }
func (*TodoUpdated) EventType() string          { return EventTodoUpdated }
func (*FileEdited) EventType() string           { return EventFileEdited }

func (p *SessionCreated) sessionID() string       { return p.SessionID }
func (p *SessionUpdated) sessionID() string       { return p.SessionID }
func (p *SessionDeleted) sessionID() string       { return p.SessionID }
func (p *SessionStatusChanged) sessionID() string { return p.SessionID }
func (p *SessionIdle) sessionID() string          { return p.SessionID }
func (p *SessionDiff) sessionID() string          { return p.SessionID }
func (p *SessionError) sessionID() string         { return p.SessionID }
func (p *SessionCompacted) sessionID() string     { return p.SessionID }
func (p *MessageUpdated) sessionID() string       { return p.SessionID }
func (p *MessageRemoved) sessionID() string       { return p.SessionID }
func (p *MessagePartUpdated) sessionID() string   { return p.SessionID }
func (p *MessagePartDelta) sessionID() string     { return p.SessionID }
func (p *MessagePartRemoved) sessionID() string   { return p.SessionID }
func (p *PermissionAsked) sessionID() string      { return p.SessionID }
func (p *PermissionReplied) sessionID() string    { return p.SessionID }
func (p *QuestionAsked) sessionID() string        { return p.SessionID }
func (p *QuestionReplied) sessionID() string      { return p.SessionID }
func (p *QuestionRejected) sessionID() string     { return p.SessionID }
func (p *TodoUpdated) sessionID() string          { return p.SessionID }

// The fields a driver keys on must be there: an event without them cannot
// be routed or applied.

func (p *SessionCreated) validate() error {
	return need("sessionID", p.SessionID, "info.id", p.Info.ID)
}
func (p *SessionUpdated) validate() error {
	return need("sessionID", p.SessionID, "info.id", p.Info.ID)
}
func (p *SessionDeleted) validate() error {
	return need("sessionID", p.SessionID, "info.id", p.Info.ID)
}
func (p *SessionStatusChanged) validate() error {
	return need("sessionID", p.SessionID, "status.type", p.Status.Type)
}
func (p *SessionIdle) validate() error      { return need("sessionID", p.SessionID) }
func (p *SessionDiff) validate() error      { return need("sessionID", p.SessionID) }
func (p *SessionCompacted) validate() error { return need("sessionID", p.SessionID) }
func (p *MessageUpdated) validate() error {
	return need("sessionID", p.SessionID, "info.id", p.Info.ID, "info.role", p.Info.Role)
}
func (p *MessageRemoved) validate() error {
	return need("sessionID", p.SessionID, "messageID", p.MessageID)
}
func (p *MessagePartUpdated) validate() error {
	if p.Part == nil {
		return fmt.Errorf("%w: part", ErrMissingField)
	}
	b := p.Part.Base()
	return need("sessionID", p.SessionID, "part.id", b.ID, "part.messageID", b.MessageID, "part.type", b.Type)
}
func (p *MessagePartDelta) validate() error {
	return need("sessionID", p.SessionID, "messageID", p.MessageID, "partID", p.PartID, "field", p.Field)
}
func (p *MessagePartRemoved) validate() error {
	return need("sessionID", p.SessionID, "messageID", p.MessageID, "partID", p.PartID)
}
func (p *PermissionAsked) validate() error { return need("id", p.ID, "sessionID", p.SessionID) }
func (p *PermissionReplied) validate() error {
	return need("sessionID", p.SessionID, "requestID", p.RequestID, "reply", string(p.Reply))
}
func (p *QuestionAsked) validate() error { return need("id", p.ID, "sessionID", p.SessionID) }
func (p *QuestionReplied) validate() error {
	return need("sessionID", p.SessionID, "requestID", p.RequestID)
}
func (p *QuestionRejected) validate() error {
	return need("sessionID", p.SessionID, "requestID", p.RequestID)
}
func (p *TodoUpdated) validate() error { return need("sessionID", p.SessionID) }

// need takes name, value pairs and reports the first empty value.
func need(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return fmt.Errorf("%w: %s", ErrMissingField, pairs[i])
		}
	}
	return nil
}
