package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Event types of GET /event that this package types.
const (
	EventServerConnected  = "server.connected"
	EventServerHeartbeat  = "server.heartbeat" // every 10 s; not in the OpenAPI document
	EventInstanceDisposed = "server.instance.disposed"
	EventGlobalDisposed   = "global.disposed"

	EventSessionCreated   = "session.created"
	EventSessionUpdated   = "session.updated"
	EventSessionDeleted   = "session.deleted"
	EventSessionStatus    = "session.status"
	EventSessionIdle      = "session.idle"
	EventSessionDiff      = "session.diff"
	EventSessionError     = "session.error"
	EventSessionCompacted = "session.compacted"

	EventMessageUpdated     = "message.updated"
	EventMessageRemoved     = "message.removed"
	EventMessagePartUpdated = "message.part.updated"
	EventMessagePartDelta   = "message.part.delta"
	EventMessagePartRemoved = "message.part.removed"

	EventPermissionAsked   = "permission.asked"
	EventPermissionReplied = "permission.replied"
	EventQuestionAsked     = "question.asked"
	EventQuestionReplied   = "question.replied"
	EventQuestionRejected  = "question.rejected"

	EventTodoUpdated = "todo.updated"
	EventFileEdited  = "file.edited"
)

// Noise event types: the server's catalog and plugins changing, which say
// nothing about a session. They decode to *Noise.
const (
	EventPluginAdded        = "plugin.added" // about 45 when the first session starts
	EventCatalogUpdated     = "catalog.updated"
	EventIntegrationUpdated = "integration.updated"
	EventReferenceUpdated   = "reference.updated"
	EventModelsDevRefreshed = "models-dev.refreshed"
	EventLSPUpdated         = "lsp.updated"
)

// Event is one bus event from GET /event: {"id", "type", "properties"}.
// Payload is the typed properties (see the types returning the Event*
// constants from EventType), *Noise for noise events, or *Unknown for any
// other type.
type Event struct {
	ID         string          // "evt_…"
	Type       string          // "session.status", …
	Properties json.RawMessage // the exact properties object (nil if absent)
	Payload    Payload
	raw        []byte
}

// Raw is the event's exact JSON, as the server sent it. Do not modify it.
func (e *Event) Raw() []byte { return e.raw }

// MarshalJSON writes the event's exact bytes.
func (e *Event) MarshalJSON() ([]byte, error) {
	if e.raw == nil {
		return nil, errors.New("opencode: event has no bytes; build it with NewEvent")
	}
	return e.raw, nil
}

// IsNoise reports whether the event is a noise event a driver skips.
func (e *Event) IsNoise() bool {
	_, ok := e.Payload.(*Noise)
	return ok
}

// SessionID is the session the event is about, "" for server-wide events
// (and a session.error without a session). For an *Unknown event it is its
// properties' sessionID, if a string.
func (e *Event) SessionID() string {
	if s, ok := e.Payload.(interface{ sessionID() string }); ok {
		return s.sessionID()
	}
	return ""
}

// Payload is an event's typed properties.
type Payload interface {
	// EventType is the event type the payload belongs to.
	EventType() string
}

// NewEvent builds the event a server would send, for tests and fakes: the
// payload marshalled as its properties, with Raw set.
func NewEvent(id string, p Payload) (*Event, error) {
	props, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("opencode: marshal %s properties: %w", p.EventType(), err)
	}
	raw, err := json.Marshal(struct {
		ID         string          `json:"id,omitempty"`
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
	}{id, p.EventType(), props})
	if err != nil {
		return nil, fmt.Errorf("opencode: marshal %s event: %w", p.EventType(), err)
	}
	return DecodeEvent(raw)
}

// DecodeError reports event data that is not an event object, has no type,
// or whose properties do not have the shape its type promises. The stream
// goes on after it.
type DecodeError struct {
	ID   string // the event's id and type, when they could be read
	Type string
	Data []byte // the offending data, truncated to 512 bytes
	Err  error
}

func (e *DecodeError) Error() string {
	if e.Type != "" {
		return fmt.Sprintf("opencode: cannot decode %s event %q: %v", e.Type, e.Data, e.Err)
	}
	return fmt.Sprintf("opencode: cannot decode event %q: %v", e.Data, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

func (e *DecodeError) Is(target error) bool { return target == ErrSkipped }

// ErrMissingField is wrapped by a DecodeError for an event without a field
// a driver keys on (a session, message or part id, a type).
var ErrMissingField = errors.New("required field missing")

func decodeError(id, typ string, data []byte, err error) *DecodeError {
	shown := data
	if len(shown) > 512 {
		shown = shown[:512]
	}
	return &DecodeError{ID: id, Type: typ, Data: append([]byte(nil), shown...), Err: err}
}

type envelope struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// DecodeEvent decodes one event's data. data becomes the event's Raw and
// must not be modified afterwards. A type this package does not type gives
// an *Unknown payload, never an error.
func DecodeEvent(data []byte) (*Event, error) {
	if !isObject(data) {
		return nil, decodeError("", "", data, ErrNotObject)
	}
	var env envelope
	if err := decode(data, &env); err != nil {
		return nil, decodeError("", "", data, err)
	}
	if env.Type == "" {
		return nil, decodeError(env.ID, "", data, fmt.Errorf("%w: type", ErrMissingField))
	}
	props := env.Properties
	if string(props) == "null" {
		props = nil
	}
	if props != nil && !isObject(props) {
		return nil, decodeError(env.ID, env.Type, data, fmt.Errorf("properties: %w", ErrNotObject))
	}
	p, err := decodePayload(env.Type, props)
	if err != nil {
		return nil, decodeError(env.ID, env.Type, data, err)
	}
	return &Event{ID: env.ID, Type: env.Type, Properties: props, Payload: p, raw: data}, nil
}

// decodePayload decodes properties (nil when absent) for typ.
func decodePayload(typ string, props []byte) (Payload, error) {
	p := newPayload(typ)
	if props != nil {
		if err := decode(props, p); err != nil {
			return nil, fmt.Errorf("properties: %w", err)
		}
	}
	if v, ok := p.(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func newPayload(typ string) Payload {
	switch typ {
	case EventServerConnected:
		return &ServerConnected{}
	case EventServerHeartbeat:
		return &ServerHeartbeat{}
	case EventInstanceDisposed:
		return &InstanceDisposed{}
	case EventGlobalDisposed:
		return &GlobalDisposed{}
	case EventSessionCreated:
		return &SessionCreated{}
	case EventSessionUpdated:
		return &SessionUpdated{}
	case EventSessionDeleted:
		return &SessionDeleted{}
	case EventSessionStatus:
		return &SessionStatusChanged{}
	case EventSessionIdle:
		return &SessionIdle{}
	case EventSessionDiff:
		return &SessionDiff{}
	case EventSessionError:
		return &SessionError{}
	case EventSessionCompacted:
		return &SessionCompacted{}
	case EventMessageUpdated:
		return &MessageUpdated{}
	case EventMessageRemoved:
		return &MessageRemoved{}
	case EventMessagePartUpdated:
		return &MessagePartUpdated{}
	case EventMessagePartDelta:
		return &MessagePartDelta{}
	case EventMessagePartRemoved:
		return &MessagePartRemoved{}
	case EventPermissionAsked:
		return &PermissionAsked{}
	case EventPermissionReplied:
		return &PermissionReplied{}
	case EventQuestionAsked:
		return &QuestionAsked{}
	case EventQuestionReplied:
		return &QuestionReplied{}
	case EventQuestionRejected:
		return &QuestionRejected{}
	case EventTodoUpdated:
		return &TodoUpdated{}
	case EventFileEdited:
		return &FileEdited{}
	case EventPluginAdded, EventCatalogUpdated, EventIntegrationUpdated, EventReferenceUpdated,
		EventModelsDevRefreshed, EventLSPUpdated:
		return &Noise{Type: typ}
	}
	return &Unknown{Type: typ}
}

// Noise is a noise event's properties: ID is the plugin.added plugin's id.
type Noise struct {
	Type string `json:"-"`
	ID   string `json:"id,omitempty"`
}

func (n *Noise) EventType() string { return n.Type }

// Unknown is the payload of an event type this package does not type (the
// session.next.* family, pty.*, tui.*, a newer server's …). Properties is
// the raw properties object; SessionID its sessionID, if a string.
type Unknown struct {
	Type       string
	SessionID  string
	Properties json.RawMessage
}

func (u *Unknown) EventType() string { return u.Type }
func (u *Unknown) sessionID() string { return u.SessionID }

func (u *Unknown) UnmarshalJSON(data []byte) error {
	u.Properties = data
	var probe struct {
		SessionID json.RawMessage `json:"sessionID"`
	}
	if err := decode(data, &probe); err != nil {
		return err
	}
	var id string
	if decode(probe.SessionID, &id) == nil {
		u.SessionID = id
	}
	return nil
}

func (u *Unknown) MarshalJSON() ([]byte, error) {
	if u.Properties == nil {
		return []byte("{}"), nil
	}
	return u.Properties, nil
}
