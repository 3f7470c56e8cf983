package codexapp

import "encoding/json"

// Server requests: questions to the user.

// The question methods.
const (
	// MethodToolRequestUserInput is the model's request_user_input tool
	// (in Default mode with the default_mode_request_user_input feature).
	MethodToolRequestUserInput = "item/tool/requestUserInput"
	// MethodMcpElicitation is an MCP server's elicitation/create, relayed.
	MethodMcpElicitation = "mcpServer/elicitation/request"
)

// FeatureDefaultModeRequestUserInput, set in a thread's config, lets the
// model ask the user questions (request_user_input) outside Plan mode.
const FeatureDefaultModeRequestUserInput = "features.default_mode_request_user_input"

// ToolRequestUserInputParams asks the user one to three questions; the
// answer is a ToolRequestUserInputResponse.
type ToolRequestUserInputParams struct {
	ThreadID   string              `json:"threadId"`
	TurnID     string              `json:"turnId"`
	ItemID     string              `json:"itemId"` // the tool call's id
	Questions  []UserInputQuestion `json:"questions"`
	IsBlocking bool                `json:"isBlocking"`
}

func (*ToolRequestUserInputParams) Method() string { return MethodToolRequestUserInput }
func (p *ToolRequestUserInputParams) check() error { return require("itemId", p.ItemID) }

// UserInputQuestion is one question: its options, or none for a free
// answer; IsOther offers a free answer besides them.
type UserInputQuestion struct {
	ID       string            `json:"id"`
	Header   string            `json:"header"`
	Question string            `json:"question"`
	IsOther  bool              `json:"isOther,omitempty"`
	IsSecret bool              `json:"isSecret,omitempty"`
	Options  []UserInputOption `json:"options,omitempty"`
}

// UserInputOption is one choice of a question.
type UserInputOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// ToolRequestUserInputResponse answers request_user_input: for each
// question id, the chosen labels (or typed text). An empty map answers
// nothing, as a user who dismisses the questions does.
type ToolRequestUserInputResponse struct {
	Answers map[string]UserInputAnswer `json:"answers"`
}

// UserInputAnswer is one question's answer.
type UserInputAnswer struct {
	Answers []string `json:"answers"`
}

// McpElicitationParams relays an MCP server's request for input: a form
// (Mode "form", or OpenAI's "openai/form" and "openaiForm", with
// RequestedSchema) or a page to visit (Mode "url", with URL).
type McpElicitationParams struct {
	ServerName string  `json:"serverName"`
	ThreadID   string  `json:"threadId"`
	TurnID     *string `json:"turnId,omitempty"`
	Mode       string  `json:"mode"`
	Message    string  `json:"message"`
	// RequestedSchema is the form: {"type":"object","properties":{…}}.
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
	Meta            json.RawMessage `json:"_meta,omitempty"`
}

func (*McpElicitationParams) Method() string { return MethodMcpElicitation }
func (p *McpElicitationParams) check() error {
	return require("serverName", p.ServerName, "mode", p.Mode)
}

// Elicitation modes.
const (
	ElicitationForm = "form"
	ElicitationURL  = "url"
)

// Elicitation actions.
const (
	ElicitationAccept  = "accept"
	ElicitationDecline = "decline"
	ElicitationCancel  = "cancel"
)

// McpElicitationResponse answers an elicitation: accept (with Content, the
// form's values, for a form), decline or cancel.
type McpElicitationResponse struct {
	Action  string `json:"action"`
	Content any    `json:"content,omitempty"`
}
