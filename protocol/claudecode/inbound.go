package claudecode

import "encoding/json"

// CanUseToolRequest asks whether a tool may run (with
// --permission-prompt-tool stdio).
type CanUseToolRequest struct {
	ToolName              string             `json:"tool_name"`
	Input                 json.RawMessage    `json:"input"`
	ToolUseID             string             `json:"tool_use_id,omitempty"`
	PermissionSuggestions []PermissionUpdate `json:"permission_suggestions,omitempty"`
	BlockedPath           string             `json:"blocked_path,omitempty"`
	DecisionReason        string             `json:"decision_reason,omitempty"`
	AgentID               string             `json:"agent_id,omitempty"`
	Title                 string             `json:"title,omitempty"`
	DisplayName           string             `json:"display_name,omitempty"`
	Description           string             `json:"description,omitempty"`
}

// PermissionUpdate changes permission rules, mode or directories.
// Type is addRules, replaceRules, removeRules, setMode, addDirectories or
// removeDirectories; Destination is userSettings, projectSettings,
// localSettings, session or cliArg.
type PermissionUpdate struct {
	Type        string           `json:"type"`
	Rules       []PermissionRule `json:"rules,omitempty"`
	Behavior    string           `json:"behavior,omitempty"`
	Mode        string           `json:"mode,omitempty"`
	Directories []string         `json:"directories,omitempty"`
	Destination string           `json:"destination,omitempty"`
}

// PermissionRule names a tool and optionally a content pattern.
type PermissionRule struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// PermissionResponse answers can_use_tool. Behavior is "allow" or "deny".
// The CLI needs UpdatedInput on allow; callers fill it with the original
// input when nothing changed.
type PermissionResponse struct {
	Behavior           string             `json:"behavior"`
	UpdatedInput       json.RawMessage    `json:"updatedInput,omitempty"`
	UpdatedPermissions []PermissionUpdate `json:"updatedPermissions,omitempty"`
	Message            string             `json:"message,omitempty"`
	Interrupt          bool               `json:"interrupt,omitempty"`
	ToolUseID          string             `json:"toolUseID,omitempty"`
}

// HookCallbackRequest asks the SDK to run a registered hook callback.
type HookCallbackRequest struct {
	CallbackID string          `json:"callback_id"`
	Input      json.RawMessage `json:"input"`
	ToolUseID  string          `json:"tool_use_id,omitempty"`
}

// MCPMessageRequest carries one JSON-RPC message for an in-process server.
type MCPMessageRequest struct {
	ServerName string          `json:"server_name"`
	Message    json.RawMessage `json:"message"`
}

// MCPMessageResponse answers MCPMessageRequest.
type MCPMessageResponse struct {
	MCPResponse json.RawMessage `json:"mcp_response"`
}

// ElicitationRequest asks the user for input on behalf of an MCP server.
type ElicitationRequest struct {
	MCPServerName   string          `json:"mcp_server_name"`
	Message         string          `json:"message"`
	Mode            string          `json:"mode,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitation_id,omitempty"`
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty"`
}
