package mockclaude

import "encoding/json"

// Wire shapes of the stdout messages, with field names and order taken from
// real CLI 2.1.197 captures.

type systemInit struct {
	Type                    string         `json:"type"`
	Subtype                 string         `json:"subtype"`
	Cwd                     string         `json:"cwd"`
	SessionID               string         `json:"session_id"`
	Tools                   []string       `json:"tools"`
	MCPServers              []mcpServerRef `json:"mcp_servers"`
	Model                   string         `json:"model"`
	PermissionMode          string         `json:"permissionMode"`
	SlashCommands           []string       `json:"slash_commands"`
	APIKeySource            string         `json:"apiKeySource"`
	ClaudeCodeVersion       string         `json:"claude_code_version"`
	OutputStyle             string         `json:"output_style"`
	Agents                  []string       `json:"agents"`
	Skills                  []string       `json:"skills"`
	Plugins                 []any          `json:"plugins"`
	AnalyticsDisabled       bool           `json:"analytics_disabled"`
	ProductFeedbackDisabled bool           `json:"product_feedback_disabled"`
	UUID                    string         `json:"uuid"`
	FastModeState           string         `json:"fast_mode_state"`
}

type mcpServerRef struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

type systemStatus struct {
	Type           string  `json:"type"`
	Subtype        string  `json:"subtype"`
	Status         *string `json:"status"`
	PermissionMode string  `json:"permissionMode,omitempty"`
	UUID           string  `json:"uuid"`
	SessionID      string  `json:"session_id"`
}

type msgUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// apiMessage is the Anthropic message inside `assistant` and message_start.
type apiMessage struct {
	ID                string          `json:"id"`
	Type              string          `json:"type"`
	Role              string          `json:"role"`
	Model             string          `json:"model"`
	Content           []any           `json:"content"`
	StopReason        *string         `json:"stop_reason"`
	StopSequence      *string         `json:"stop_sequence"`
	Usage             msgUsage        `json:"usage"`
	ContextManagement json.RawMessage `json:"context_management,omitempty"`
}

type assistantMsg struct {
	Type            string     `json:"type"`
	Message         apiMessage `json:"message"`
	ParentToolUseID *string    `json:"parent_tool_use_id"`
	SessionID       string     `json:"session_id"`
	UUID            string     `json:"uuid"`
	RequestID       string     `json:"request_id"`
}

type userMsg struct {
	Type            string     `json:"type"`
	Message         userParams `json:"message"`
	ParentToolUseID *string    `json:"parent_tool_use_id"`
	SessionID       string     `json:"session_id"`
	UUID            string     `json:"uuid"`
	Timestamp       string     `json:"timestamp"`
	ToolUseResult   any        `json:"tool_use_result,omitempty"`
}

type userParams struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type toolResultBlock struct {
	ToolUseID string `json:"tool_use_id"`
	Type      string `json:"type"`
	Content   any    `json:"content"`
	IsError   *bool  `json:"is_error,omitempty"`
}

type streamEventMsg struct {
	Type            string      `json:"type"`
	Event           streamEvent `json:"event"`
	SessionID       string      `json:"session_id"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	UUID            string      `json:"uuid"`
	TTFTMS          *int64      `json:"ttft_ms,omitempty"`
}

// streamEvent is one raw Anthropic SSE event.
type streamEvent struct {
	Type         string      `json:"type"`
	Index        *int        `json:"index,omitempty"`
	Message      *apiMessage `json:"message,omitempty"`
	ContentBlock any         `json:"content_block,omitempty"`
	Delta        any         `json:"delta,omitempty"`
	Usage        any         `json:"usage,omitempty"`
}

type textDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type inputJSONDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type messageDelta struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

type resultMsg struct {
	Type              string                    `json:"type"`
	Subtype           string                    `json:"subtype"`
	IsError           bool                      `json:"is_error"`
	APIErrorStatus    *int                      `json:"api_error_status"`
	DurationMS        int64                     `json:"duration_ms"`
	DurationAPIMS     int64                     `json:"duration_api_ms"`
	NumTurns          int                       `json:"num_turns"`
	Result            *string                   `json:"result,omitempty"`
	StopReason        *string                   `json:"stop_reason"`
	SessionID         string                    `json:"session_id"`
	TotalCostUSD      float64                   `json:"total_cost_usd"`
	Usage             resultUsage               `json:"usage"`
	ModelUsage        map[string]modelUsageInfo `json:"modelUsage"`
	PermissionDenials []permissionDenial        `json:"permission_denials"`
	TerminalReason    string                    `json:"terminal_reason"`
	FastModeState     string                    `json:"fast_mode_state"`
	UUID              string                    `json:"uuid"`
	Errors            []string                  `json:"errors,omitempty"`
}

type resultUsage struct {
	InputTokens              int            `json:"input_tokens"`
	CacheCreationInputTokens int            `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int            `json:"cache_read_input_tokens"`
	OutputTokens             int            `json:"output_tokens"`
	ServerToolUse            map[string]int `json:"server_tool_use"`
	ServiceTier              string         `json:"service_tier"`
	CacheCreation            map[string]int `json:"cache_creation"`
	InferenceGeo             string         `json:"inference_geo"`
	Iterations               []any          `json:"iterations"`
	Speed                    string         `json:"speed"`
}

type modelUsageInfo struct {
	InputTokens              int     `json:"inputTokens"`
	OutputTokens             int     `json:"outputTokens"`
	CacheReadInputTokens     int     `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int     `json:"cacheCreationInputTokens"`
	WebSearchRequests        int     `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int     `json:"contextWindow"`
	MaxOutputTokens          int     `json:"maxOutputTokens"`
}

type permissionDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// Control protocol envelopes.

type controlRequestMsg struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   any    `json:"request"`
}

type controlResponseMsg struct {
	Type     string              `json:"type"`
	Response controlResponseBody `json:"response"`
}

type controlResponseBody struct {
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Response  any    `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

type controlCancelMsg struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
}

func newResultUsage(in, out int) resultUsage {
	return resultUsage{
		InputTokens:   in,
		OutputTokens:  out,
		ServerToolUse: map[string]int{"web_search_requests": 0, "web_fetch_requests": 0},
		ServiceTier:   "standard",
		CacheCreation: map[string]int{"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
		Iterations:    []any{},
		Speed:         "standard",
	}
}

func ptr[T any](v T) *T { return &v }
