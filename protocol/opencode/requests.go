package opencode

import (
	"encoding/json"
	"fmt"
)

// Health is GET /global/health's answer.
type Health struct {
	Healthy bool   `json:"healthy"`
	Version string `json:"version"` // "1.18.33"
}

// CreateSessionRequest is POST /session's body; every field is optional
// ({} makes a plain session).
type CreateSessionRequest struct {
	ParentID    string           `json:"parentID,omitempty"` // make it a child of this session
	Title       string           `json:"title,omitempty"`
	Agent       string           `json:"agent,omitempty"`
	Model       *SessionModel    `json:"model,omitempty"`
	Metadata    json.RawMessage  `json:"metadata,omitempty"`
	Permission  []PermissionRule `json:"permission,omitempty"` // rules for this session (bash: ask, …)
	WorkspaceID string           `json:"workspaceID,omitempty"`
}

// PromptRequest is the body of POST /session/{id}/message (which answers
// when the turn ends) and of POST /session/{id}/prompt_async (which
// answers 204 at once).
type PromptRequest struct {
	MessageID string          `json:"messageID,omitempty"` // the user message's id, if the client picks it ("msg_…")
	Model     *PromptModel    `json:"model,omitempty"`
	Agent     string          `json:"agent,omitempty"` // build, plan, …
	NoReply   bool            `json:"noReply,omitempty"`
	Tools     map[string]bool `json:"tools,omitempty"` // tools turned on or off for this prompt
	Format    *OutputFormat   `json:"format,omitempty"`
	System    string          `json:"system,omitempty"`
	Variant   string          `json:"variant,omitempty"`
	Parts     []PartInput     `json:"parts"`
}

// NewTextPrompt is a prompt of one text part.
func NewTextPrompt(text string) PromptRequest {
	return PromptRequest{Parts: []PartInput{TextInput{Text: text}}}
}

// PromptModel picks a prompt's model.
type PromptModel struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
}

// OutputFormat asks for text (Type "text") or for output matching a JSON
// schema (Type "json_schema", Schema), which the message's Structured
// field then holds.
type OutputFormat struct {
	Type       string          `json:"type"`
	Schema     json.RawMessage `json:"schema,omitempty"`
	RetryCount int             `json:"retryCount,omitempty"`
}

// PartInput is one part of a prompt: TextInput, FileInput, AgentInput,
// SubtaskInput, or RawPartInput for a shape this package does not build.
type PartInput interface {
	partInput()
}

// TextInput is a prompt's text.
type TextInput struct {
	ID        string          `json:"id,omitempty"`
	Text      string          `json:"text"`
	Synthetic bool            `json:"synthetic,omitempty"`
	Ignored   bool            `json:"ignored,omitempty"`
	Time      *PartTime       `json:"time,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// FileInput attaches a file: URL is a file: or data: URL.
type FileInput struct {
	ID       string          `json:"id,omitempty"`
	Mime     string          `json:"mime"`
	Filename string          `json:"filename,omitempty"`
	URL      string          `json:"url"`
	Source   *FilePartSource `json:"source,omitempty"`
}

// AgentInput mentions an agent.
type AgentInput struct {
	ID     string       `json:"id,omitempty"`
	Name   string       `json:"name"`
	Source *AgentSource `json:"source,omitempty"`
}

// SubtaskInput hands a task to a subagent.
type SubtaskInput struct {
	ID          string       `json:"id,omitempty"`
	Prompt      string       `json:"prompt"`
	Description string       `json:"description"`
	Agent       string       `json:"agent"`
	Model       *PromptModel `json:"model,omitempty"`
	Command     string       `json:"command,omitempty"`
}

// RawPartInput is a prompt part sent as it is.
type RawPartInput json.RawMessage

func (TextInput) partInput()    {}
func (FileInput) partInput()    {}
func (AgentInput) partInput()   {}
func (SubtaskInput) partInput() {}
func (RawPartInput) partInput() {}

// The inputs marshal with their type, so a literal needs none.

func (p TextInput) MarshalJSON() ([]byte, error) {
	type plain TextInput
	return marshalTyped(PartText, plain(p))
}

func (p FileInput) MarshalJSON() ([]byte, error) {
	type plain FileInput
	return marshalTyped(PartFile, plain(p))
}

func (p AgentInput) MarshalJSON() ([]byte, error) {
	type plain AgentInput
	return marshalTyped(PartAgent, plain(p))
}

func (p SubtaskInput) MarshalJSON() ([]byte, error) {
	type plain SubtaskInput
	return marshalTyped(PartSubtask, plain(p))
}

func (p RawPartInput) MarshalJSON() ([]byte, error) {
	if !json.Valid(p) || !isObject(p) {
		return nil, fmt.Errorf("opencode: raw prompt part: %w", ErrNotObject)
	}
	return p, nil
}

// marshalTyped marshals v, an object, with "type" first.
func marshalTyped(typ string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(typ)+10)
	out = append(out, `{"type":`...)
	out = append(out, '"')
	out = append(out, typ...)
	out = append(out, '"')
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// PermissionReply answers a permission request.
type PermissionReply string

// Permission replies.
const (
	ReplyOnce   PermissionReply = "once"   // allow this call
	ReplyAlways PermissionReply = "always" // allow this call and the request's Always patterns from now on
	ReplyReject PermissionReply = "reject" // refuse; the tool call fails
)

// Valid reports whether r is one of the replies the server takes.
func (r PermissionReply) Valid() bool {
	return r == ReplyOnce || r == ReplyAlways || r == ReplyReject
}

// PermissionReplyRequest is POST /permission/{requestID}/reply's body.
// Message, with a reject, tells the model why.
type PermissionReplyRequest struct {
	Reply   PermissionReply `json:"reply"`
	Message string          `json:"message,omitempty"`
}

// ForkRequest is POST /session/{id}/fork's body: fork at MessageID (the
// messages before it are copied), or the whole session when empty.
type ForkRequest struct {
	MessageID string `json:"messageID,omitempty"`
}

// RevertRequest is POST /session/{id}/revert's body: undo the session from
// MessageID (or from one of its parts) on, files included.
type RevertRequest struct {
	MessageID string `json:"messageID"`
	PartID    string `json:"partID,omitempty"`
}

// QuestionReplyRequest is POST /question/{requestID}/reply's body: for
// each question in order, the chosen labels (or a typed answer).
type QuestionReplyRequest struct {
	Answers [][]string `json:"answers"`
}
