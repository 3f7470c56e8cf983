package claudecode

import "encoding/json"

// System message subtypes with fields of their own. Other subtypes (and
// future ones) still parse: their fields are in Raw.
const (
	SystemInit            = "init"
	SystemStatus          = "status"
	SystemAPIRetry        = "api_retry"
	SystemCompactBoundary = "compact_boundary"
	SystemHookStarted     = "hook_started"
	SystemHookProgress    = "hook_progress"
	SystemHookResponse    = "hook_response"
	SystemTaskStarted     = "task_started"
	SystemTaskProgress    = "task_progress"
	SystemTaskNotify      = "task_notification"
	SystemTaskUpdated     = "task_updated"
	SystemBackgroundTasks = "background_tasks_changed"
)

// SystemMessage is any "system" line. Fields are filled per subtype: the
// init fields for "init", Status for "status", the retry fields for
// "api_retry", the task fields for "task_*", the hook fields for "hook_*".
type SystemMessage struct {
	base
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	UUID      string `json:"uuid"`

	// init
	Cwd               string            `json:"cwd,omitempty"`
	Model             string            `json:"model,omitempty"`
	PermissionMode    string            `json:"permissionMode,omitempty"`
	APIKeySource      string            `json:"apiKeySource,omitempty"`
	ClaudeCodeVersion string            `json:"claude_code_version,omitempty"`
	OutputStyle       string            `json:"output_style,omitempty"`
	Tools             []string          `json:"tools,omitempty"`
	SlashCommands     []string          `json:"slash_commands,omitempty"`
	Agents            []string          `json:"agents,omitempty"`
	Skills            []string          `json:"skills,omitempty"`
	Betas             []string          `json:"betas,omitempty"`
	MCPServers        []MCPServerStatus `json:"mcp_servers,omitempty"`

	// status: "requesting", "compacting" or null
	Status *string `json:"status,omitempty"`

	// api_retry
	Attempt      int     `json:"attempt,omitempty"`
	MaxRetries   int     `json:"max_retries,omitempty"`
	RetryDelayMS float64 `json:"retry_delay_ms,omitempty"`
	ErrorStatus  *int    `json:"error_status,omitempty"`

	// task_started, task_progress, task_notification, task_updated
	TaskID      string `json:"task_id,omitempty"`
	TaskType    string `json:"task_type,omitempty"`
	ToolUseID   string `json:"tool_use_id,omitempty"`
	Description string `json:"description,omitempty"`
	Summary     string `json:"summary,omitempty"`
	// Tasks is the live set in background_tasks_changed.
	Tasks []json.RawMessage `json:"tasks,omitempty"`

	// hook_started, hook_progress, hook_response
	HookID    string `json:"hook_id,omitempty"`
	HookName  string `json:"hook_name,omitempty"`
	HookEvent string `json:"hook_event,omitempty"`
	Outcome   string `json:"outcome,omitempty"`
	ExitCode  *int   `json:"exit_code,omitempty"`
}

func (*SystemMessage) Type() string { return TypeSystem }

// MCPServerStatus is one MCP server as system/init and mcp_status list it.
type MCPServerStatus struct {
	Name       string          `json:"name"`
	Status     string          `json:"status"`
	ServerInfo json.RawMessage `json:"serverInfo,omitempty"`
	Error      string          `json:"error,omitempty"`
	Scope      string          `json:"scope,omitempty"`
	Tools      []MCPToolInfo   `json:"tools,omitempty"`
}

// MCPToolInfo describes one tool of an MCP server.
type MCPToolInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// APIMessage is the Anthropic message inside assistant lines.
type APIMessage struct {
	ID         string  `json:"id"`
	Role       string  `json:"role"`
	Model      string  `json:"model"`
	Content    Content `json:"content"`
	StopReason *string `json:"stop_reason"`
	Usage      *Usage  `json:"usage,omitempty"`
}

// AssistantMessage is a model reply (whole, not streamed).
type AssistantMessage struct {
	base
	Message         APIMessage `json:"message"`
	ParentToolUseID *string    `json:"parent_tool_use_id"`
	SessionID       string     `json:"session_id"`
	UUID            string     `json:"uuid"`
	// Error is set when the CLI synthesised this message from an API failure
	// (authentication_failed, rate_limit, server_error, …).
	Error string `json:"error,omitempty"`
	// Aborted is true when an interrupt truncated the message.
	Aborted bool `json:"aborted,omitempty"`
}

func (*AssistantMessage) Type() string { return TypeAssistant }

// UserMessageParam is the message inside user lines.
type UserMessageParam struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// UserMessage is a user turn echoed back, usually carrying tool results.
type UserMessage struct {
	base
	Message         UserMessageParam `json:"message"`
	ParentToolUseID *string          `json:"parent_tool_use_id"`
	SessionID       string           `json:"session_id"`
	UUID            string           `json:"uuid"`
	// ToolUseResult is the structured output of the tool, when any.
	ToolUseResult json.RawMessage `json:"tool_use_result,omitempty"`
	IsSynthetic   bool            `json:"isSynthetic,omitempty"`
	IsReplay      bool            `json:"isReplay,omitempty"`
}

func (*UserMessage) Type() string { return TypeUser }

// Result subtypes.
const (
	ResultSuccess                  = "success"
	ResultErrorMaxTurns            = "error_max_turns"
	ResultErrorDuringExecution     = "error_during_execution"
	ResultErrorMaxBudgetUSD        = "error_max_budget_usd"
	ResultErrorMaxStructuredOutput = "error_max_structured_output_retries"
)

// ResultMessage ends a turn. An API failure arrives as subtype success with
// IsError true and APIErrorStatus set.
type ResultMessage struct {
	base
	Subtype           string                `json:"subtype"`
	IsError           bool                  `json:"is_error"`
	DurationMS        int64                 `json:"duration_ms"`
	DurationAPIMS     int64                 `json:"duration_api_ms"`
	NumTurns          int                   `json:"num_turns"`
	Result            string                `json:"result"`
	StopReason        *string               `json:"stop_reason"`
	SessionID         string                `json:"session_id"`
	UUID              string                `json:"uuid"`
	TotalCostUSD      float64               `json:"total_cost_usd"`
	Usage             Usage                 `json:"usage"`
	ModelUsage        map[string]ModelUsage `json:"modelUsage,omitempty"`
	PermissionDenials []PermissionDenial    `json:"permission_denials,omitempty"`
	StructuredOutput  json.RawMessage       `json:"structured_output,omitempty"`
	TerminalReason    string                `json:"terminal_reason,omitempty"`
	APIErrorStatus    *int                  `json:"api_error_status,omitempty"`
	Errors            []string              `json:"errors,omitempty"`
}

func (*ResultMessage) Type() string { return TypeResult }

// Usage is token usage as the API reports it.
type Usage struct {
	InputTokens              int64  `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CacheCreationInputTokens += v.CacheCreationInputTokens
	u.CacheReadInputTokens += v.CacheReadInputTokens
	return u
}

// ModelUsage is cumulative per-model usage within a session.
type ModelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int64   `json:"contextWindow,omitempty"`
}

// PermissionDenial records a tool use that was refused during the turn.
type PermissionDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// StreamEvent wraps a raw Anthropic streaming event (with
// --include-partial-messages).
type StreamEvent struct {
	base
	Event           APIStreamEvent `json:"event"`
	ParentToolUseID *string        `json:"parent_tool_use_id"`
	SessionID       string         `json:"session_id"`
	UUID            string         `json:"uuid"`
}

func (*StreamEvent) Type() string { return TypeStreamEvent }

// APIStreamEvent is the Anthropic SSE event inside a stream_event. Delta is
// set for content_block_delta and message_delta.
type APIStreamEvent struct {
	Type         string          `json:"type"`
	Index        int             `json:"index"`
	Delta        *StreamDelta    `json:"delta,omitempty"`
	ContentBlock json.RawMessage `json:"content_block,omitempty"`
	Message      json.RawMessage `json:"message,omitempty"`
	Usage        *Usage          `json:"usage,omitempty"`
}

// StreamDelta is a content_block_delta's or message_delta's delta.
type StreamDelta struct {
	Type        string  `json:"type"`
	Text        string  `json:"text,omitempty"`
	PartialJSON string  `json:"partial_json,omitempty"`
	Thinking    string  `json:"thinking,omitempty"`
	StopReason  *string `json:"stop_reason,omitempty"`
}

// TextDelta returns the text of a text_delta event.
func (e *StreamEvent) TextDelta() (string, bool) {
	if e.Event.Type == "content_block_delta" && e.Event.Delta != nil && e.Event.Delta.Type == "text_delta" {
		return e.Event.Delta.Text, true
	}
	return "", false
}

// ToolProgress reports a long-running tool.
type ToolProgress struct {
	base
	ToolUseID          string  `json:"tool_use_id"`
	ToolName           string  `json:"tool_name"`
	ParentToolUseID    *string `json:"parent_tool_use_id"`
	ElapsedTimeSeconds float64 `json:"elapsed_time_seconds"`
	TaskID             string  `json:"task_id,omitempty"`
	SessionID          string  `json:"session_id"`
}

func (*ToolProgress) Type() string { return TypeToolProgress }

// ToolUseSummary summarises preceding tool uses.
type ToolUseSummary struct {
	base
	Summary             string   `json:"summary"`
	PrecedingToolUseIDs []string `json:"preceding_tool_use_ids"`
	SessionID           string   `json:"session_id"`
}

func (*ToolUseSummary) Type() string { return TypeToolUseSummary }

// RateLimitEvent reports the account's rate-limit state.
type RateLimitEvent struct {
	base
	RateLimitInfo json.RawMessage `json:"rate_limit_info"`
	SessionID     string          `json:"session_id"`
}

func (*RateLimitEvent) Type() string { return TypeRateLimitEvent }
