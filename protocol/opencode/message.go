package opencode

import (
	"encoding/json"
	"fmt"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is a message's info (the parts come separately): message.updated
// carries it, and the message endpoints answer with it beside the parts.
// One struct holds both roles, the user and the assistant message of the
// OpenAPI document: fields of the other role stay empty.
type Message struct {
	ID        string      `json:"id"`
	SessionID string      `json:"sessionID"`
	Role      string      `json:"role"`
	Time      MessageTime `json:"time"`
	Agent     string      `json:"agent,omitempty"`
	Variant   string      `json:"variant,omitempty"`
	// Summary is an object on a user message and true on an assistant
	// message that summarises a compacted session.
	Summary *MessageSummary `json:"summary,omitempty"`

	// User messages.
	Model  *ModelRef       `json:"model,omitempty"`
	System string          `json:"system,omitempty"`
	Tools  map[string]bool `json:"tools,omitempty"`
	Format json.RawMessage `json:"format,omitempty"` // {"type":"text"} or {"type":"json_schema",…}

	// Assistant messages.
	ParentID   string          `json:"parentID,omitempty"` // the user message answered
	ModelID    string          `json:"modelID,omitempty"`
	ProviderID string          `json:"providerID,omitempty"`
	Mode       string          `json:"mode,omitempty"`
	Path       *MessagePath    `json:"path,omitempty"`
	Cost       float64         `json:"cost,omitempty"`
	Tokens     *Tokens         `json:"tokens,omitempty"`
	Error      *NamedError     `json:"error,omitempty"`      // why the message ended early (aborted, API error, …)
	Structured json.RawMessage `json:"structured,omitempty"` // the structured output asked for with format
	Finish     string          `json:"finish,omitempty"`     // stop, tool-calls, length, … once completed
}

// MessageTime is when a message was created and, for an assistant message,
// completed (0 while it streams).
type MessageTime struct {
	Created   Millis `json:"created"`
	Completed Millis `json:"completed,omitempty"`
}

// MessagePath is the directories an assistant message worked in.
type MessagePath struct {
	Cwd  string `json:"cwd"`
	Root string `json:"root"`
}

// MessageSummary is a message's summary field, which has two forms: an
// object on user messages (title, body and the files the turn changed) and
// a boolean on assistant messages (Compaction: the message is a compacted
// session's summary).
type MessageSummary struct {
	Title      string     `json:"title,omitempty"`
	Body       string     `json:"body,omitempty"`
	Diffs      []FileDiff `json:"diffs"`
	Compaction bool       `json:"-"`
	boolean    bool
}

func (s *MessageSummary) UnmarshalJSON(data []byte) error {
	switch string(data) {
	case "true", "false":
		*s = MessageSummary{Compaction: string(data) == "true", boolean: true}
		return nil
	case "null":
		return nil
	}
	type plain MessageSummary
	var p plain
	if err := decode(data, &p); err != nil {
		return fmt.Errorf("message summary: %w", err)
	}
	*s = MessageSummary(p)
	return nil
}

func (s MessageSummary) MarshalJSON() ([]byte, error) {
	if s.boolean || (s.Compaction && s.Title == "" && s.Body == "" && s.Diffs == nil) {
		return json.Marshal(s.Compaction)
	}
	type plain MessageSummary
	p := plain(s)
	if p.Diffs == nil {
		p.Diffs = []FileDiff{}
	}
	return json.Marshal(p)
}

// MessageWithParts is a message and its parts, as GET
// /session/{id}/message lists them and POST /session/{id}/message answers.
type MessageWithParts struct {
	Info  Message `json:"info"`
	Parts Parts   `json:"parts"`
}

// Names of the errors a message or session reports.
const (
	ErrorNameAPI              = "APIError"
	ErrorNameAborted          = "MessageAbortedError"
	ErrorNameProviderAuth     = "ProviderAuthError"
	ErrorNameUnknown          = "UnknownError"
	ErrorNameOutputLength     = "MessageOutputLengthError"
	ErrorNameStructuredOutput = "StructuredOutputError"
	ErrorNameContextOverflow  = "ContextOverflowError"
	ErrorNameContentFilter    = "ContentFilterError"
)

// NamedError is the error on an assistant message, a session.error event
// and a retry part: {"name", "data"}. Data holds the fields of every named
// error opencode defines; Raw keeps the whole object for names it does not.
type NamedError struct {
	Name string          `json:"name"`
	Data NamedErrorData  `json:"data"`
	Raw  json.RawMessage `json:"-"`
}

// NamedErrorData is a named error's data. StatusCode, IsRetryable and the
// response fields are an APIError's; ProviderID a ProviderAuthError's;
// Retries a StructuredOutputError's; Ref an UnknownError's.
type NamedErrorData struct {
	Message         string            `json:"message,omitempty"`
	StatusCode      int               `json:"statusCode,omitempty"`
	IsRetryable     bool              `json:"isRetryable,omitempty"`
	ResponseHeaders map[string]string `json:"responseHeaders,omitempty"`
	ResponseBody    string            `json:"responseBody,omitempty"`
	Metadata        json.RawMessage   `json:"metadata,omitempty"` // string values: the request's url, …
	ProviderID      string            `json:"providerID,omitempty"`
	Ref             string            `json:"ref,omitempty"`
	Retries         int               `json:"retries,omitempty"`
}

func (e *NamedError) UnmarshalJSON(data []byte) error {
	type plain NamedError
	var p plain
	if err := decode(data, &p); err != nil {
		return fmt.Errorf("named error: %w", err)
	}
	*e = NamedError(p)
	e.Raw = data
	return nil
}

// Error describes the error: its name, message and HTTP status if any.
func (e *NamedError) Error() string {
	msg := e.Name
	if msg == "" {
		msg = "error"
	}
	if e.Data.StatusCode != 0 {
		msg += fmt.Sprintf(" %d", e.Data.StatusCode)
	}
	if e.Data.Message != "" {
		msg += ": " + e.Data.Message
	}
	return "opencode: " + msg
}

// Aborted reports whether the error is an abort (POST
// /session/{id}/abort), not a failure.
func (e *NamedError) Aborted() bool { return e != nil && e.Name == ErrorNameAborted }
