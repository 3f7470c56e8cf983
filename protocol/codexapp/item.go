package codexapp

import "encoding/json"

// Item types (ThreadItem.Type) a driver maps; others keep their Raw.
const (
	ItemUserMessage      = "userMessage"
	ItemAgentMessage     = "agentMessage"
	ItemReasoning        = "reasoning"
	ItemPlan             = "plan"
	ItemCommandExecution = "commandExecution"
	ItemFileChange       = "fileChange"
	ItemMcpToolCall      = "mcpToolCall"
	ItemDynamicToolCall  = "dynamicToolCall"
	ItemWebSearch        = "webSearch"
)

// Item statuses of commands, file changes and tool calls.
const (
	StatusInProgress = "inProgress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusDeclined   = "declined"
)

// ThreadItem is one item of a turn, of any type: the fields below are the
// union of what a driver reads of each type (the schema's ThreadItem
// variants), and Raw is the whole item as it came, so a type or a field this
// package does not read is never lost.
type ThreadItem struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// Text is an agentMessage's or a plan's text.
	Text string `json:"text,omitempty"`
	// Content is a userMessage's []UserInput or a reasoning's []string;
	// see UserText and ReasoningText.
	Content json.RawMessage `json:"content,omitempty"`
	// Summary is a reasoning's summary parts.
	Summary []string `json:"summary,omitempty"`
	// Status is a command's, file change's or tool call's: inProgress,
	// completed, failed, declined.
	Status string `json:"status,omitempty"`

	// commandExecution
	Command          string `json:"command,omitempty"`
	Cwd              string `json:"cwd,omitempty"`
	AggregatedOutput string `json:"aggregatedOutput,omitempty"`
	ExitCode         *int   `json:"exitCode,omitempty"`

	// fileChange
	Changes []FileUpdateChange `json:"changes,omitempty"`

	// mcpToolCall, dynamicToolCall
	Server    string          `json:"server,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     json.RawMessage `json:"error,omitempty"`

	// webSearch
	Query string `json:"query,omitempty"`

	// Raw is the item's exact JSON.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the fields and keeps the exact item in Raw.
func (it *ThreadItem) UnmarshalJSON(data []byte) error {
	type fields ThreadItem // without this method
	var f fields
	if err := decode(data, &f); err != nil {
		return err
	}
	*it = ThreadItem(f)
	it.Raw = data
	return nil
}

// FileUpdateChange is one file of a fileChange item.
type FileUpdateChange struct {
	Path string `json:"path"`
	// Kind is {"type":"add"|"delete"|"update", "move_path"}.
	Kind PatchChangeKind `json:"kind"`
	Diff string          `json:"diff"`
}

// PatchChangeKind is what happened to a file.
type PatchChangeKind struct {
	Type     string `json:"type"` // add, delete, update
	MovePath string `json:"move_path,omitempty"`
}

// UserText is a userMessage's text pieces joined by newlines.
func (it *ThreadItem) UserText() string {
	var in []UserInput
	if json.Unmarshal(it.Content, &in) != nil {
		return ""
	}
	var s string
	for _, p := range in {
		if p.Type != "text" {
			continue
		}
		if s != "" {
			s += "\n"
		}
		s += p.Text
	}
	return s
}

// ReasoningText is a reasoning's summary, or its content when it has no
// summary, joined by blank lines.
func (it *ThreadItem) ReasoningText() string {
	parts := it.Summary
	if len(parts) == 0 {
		_ = json.Unmarshal(it.Content, &parts) // a content that is not []string has no text
	}
	var s string
	for _, p := range parts {
		if s != "" {
			s += "\n\n"
		}
		s += p
	}
	return s
}

// ToolError is a tool call's error message, "" when it has none.
func (it *ThreadItem) ToolError() string {
	if len(it.Error) == 0 || string(it.Error) == "null" {
		return ""
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(it.Error, &e) == nil && e.Message != "" {
		return e.Message
	}
	return string(it.Error)
}

// HTTPStatus is the model API's HTTP status a TurnError reports: the
// httpStatusCode of an object CodexErrorInfo, or the status its named kind
// stands for; 0 when it names none.
func (e *TurnError) HTTPStatus() int {
	if e == nil || len(e.CodexErrorInfo) == 0 {
		return 0
	}
	var name string
	if json.Unmarshal(e.CodexErrorInfo, &name) == nil {
		return namedStatus(name)
	}
	var obj map[string]struct {
		HTTPStatusCode *int `json:"httpStatusCode"`
	}
	if json.Unmarshal(e.CodexErrorInfo, &obj) != nil {
		return 0
	}
	for _, v := range obj {
		if v.HTTPStatusCode != nil {
			return *v.HTTPStatusCode
		}
	}
	return 0
}

// Kind is the CodexErrorInfo's name ("internalServerError", or the key of
// an object one), "" when absent.
func (e *TurnError) Kind() string {
	if e == nil || len(e.CodexErrorInfo) == 0 {
		return ""
	}
	var name string
	if json.Unmarshal(e.CodexErrorInfo, &name) == nil {
		return name
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(e.CodexErrorInfo, &obj) == nil {
		for k := range obj {
			return k
		}
	}
	return ""
}

// namedStatus is the HTTP status a named CodexErrorInfo stands for (codex
// classifies the API's status into these names), 0 for the others.
func namedStatus(name string) int {
	switch name {
	case "badRequest":
		return 400
	case "unauthorized":
		return 401
	case "modelNotFound":
		return 404
	case "rateLimitExceeded", "usageLimitExceeded":
		return 429
	case "internalServerError":
		return 500
	case "serverOverloaded":
		return 503
	}
	return 0
}
