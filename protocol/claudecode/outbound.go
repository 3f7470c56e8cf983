package claudecode

import "encoding/json"

// InitializeRequest is always the first control request. It registers hook
// callback ids, agents and in-process MCP servers, which stay out of argv.
type InitializeRequest struct {
	Hooks                  map[string][]HookMatcherConfig `json:"hooks"`
	Agents                 map[string]AgentDefinition     `json:"agents,omitempty"`
	SDKMCPServers          []string                       `json:"sdkMcpServers,omitempty"`
	JSONSchema             json.RawMessage                `json:"jsonSchema,omitempty"`
	SystemPrompt           *string                        `json:"systemPrompt,omitempty"`
	AppendSystemPrompt     string                         `json:"appendSystemPrompt,omitempty"`
	PromptSuggestions      bool                           `json:"promptSuggestions,omitempty"`
	AgentProgressSummaries bool                           `json:"agentProgressSummaries,omitempty"`
	Skills                 []string                       `json:"skills,omitempty"`
	ExcludeDynamicSections bool                           `json:"excludeDynamicSections,omitempty"`
	ForwardSubagentText    bool                           `json:"forwardSubagentText,omitempty"`
}

// HookMatcherConfig registers callbacks for one matcher of one event.
type HookMatcherConfig struct {
	Matcher         string   `json:"matcher,omitempty"`
	HookCallbackIDs []string `json:"hookCallbackIds"`
	// Timeout is in seconds.
	Timeout float64 `json:"timeout,omitempty"`
}

// AgentDefinition describes a custom subagent.
type AgentDefinition struct {
	Description     string   `json:"description"`
	Prompt          string   `json:"prompt"`
	Tools           []string `json:"tools,omitempty"`
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	Model           string   `json:"model,omitempty"`
	Skills          []string `json:"skills,omitempty"`
	MCPServers      []string `json:"mcpServers,omitempty"`
	MaxTurns        int      `json:"maxTurns,omitempty"`
	PermissionMode  string   `json:"permissionMode,omitempty"`
	Effort          string   `json:"effort,omitempty"`
	Background      bool     `json:"background,omitempty"`
	Memory          string   `json:"memory,omitempty"`
	InitialPrompt   string   `json:"initialPrompt,omitempty"`
}

// InitializeResponse is what the CLI answers to initialize.
type InitializeResponse struct {
	Commands              []SlashCommand  `json:"commands"`
	Agents                []AgentInfo     `json:"agents"`
	Models                []ModelInfo     `json:"models"`
	Account               json.RawMessage `json:"account,omitempty"`
	OutputStyle           string          `json:"output_style"`
	AvailableOutputStyles []string        `json:"available_output_styles"`
	PID                   int             `json:"pid,omitempty"`
}

// SlashCommand is one command the CLI offers.
type SlashCommand struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	ArgumentHint string `json:"argumentHint"`
}

// AgentInfo is one agent the CLI knows.
type AgentInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Model       string `json:"model,omitempty"`
}

// ModelInfo is one model the CLI offers.
type ModelInfo struct {
	Value       string `json:"value"`
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
}

// InterruptRequest stops the turn in progress.
type InterruptRequest struct {
	CancelQueued bool `json:"cancel_queued,omitempty"`
}

// SetModelRequest switches the model; a nil Model means the default.
type SetModelRequest struct {
	Model *string `json:"model"`
}

// SetPermissionModeRequest switches the permission mode.
type SetPermissionModeRequest struct {
	Mode string `json:"mode"`
}

// SetMaxThinkingTokensRequest sets or clears the thinking budget.
type SetMaxThinkingTokensRequest struct {
	MaxThinkingTokens *int `json:"max_thinking_tokens"`
}

// MCPStatusRequest asks for every MCP server's status.
type MCPStatusRequest struct{}

// MCPStatusResponse answers MCPStatusRequest.
type MCPStatusResponse struct {
	MCPServers []MCPServerStatus `json:"mcpServers"`
}

// MCPSetServersRequest replaces the dynamically added MCP servers.
type MCPSetServersRequest struct {
	Servers map[string]json.RawMessage `json:"servers"`
}

// MCPReconnectRequest reconnects one server.
type MCPReconnectRequest struct {
	ServerName string `json:"serverName"`
}

// MCPToggleRequest enables or disables one server.
type MCPToggleRequest struct {
	ServerName string `json:"serverName"`
	Enabled    bool   `json:"enabled"`
}

// RewindFilesRequest restores files to their state at a user message (needs
// file checkpointing).
type RewindFilesRequest struct {
	UserMessageID string `json:"user_message_id"`
	DryRun        bool   `json:"dry_run,omitempty"`
}

// RewindFilesResponse answers RewindFilesRequest.
type RewindFilesResponse struct {
	CanRewind    bool     `json:"canRewind"`
	Error        string   `json:"error,omitempty"`
	FilesChanged []string `json:"filesChanged,omitempty"`
	Insertions   int      `json:"insertions,omitempty"`
	Deletions    int      `json:"deletions,omitempty"`
}

// StopTaskRequest stops a background task.
type StopTaskRequest struct {
	TaskID string `json:"task_id"`
}

// GetContextUsageRequest asks for the context window breakdown.
type GetContextUsageRequest struct{}

// GetSettingsRequest asks for the effective settings.
type GetSettingsRequest struct{}

// ApplyFlagSettingsRequest applies settings as if given by flags.
type ApplyFlagSettingsRequest struct {
	Settings json.RawMessage `json:"settings"`
}

// CancelAsyncMessageRequest drops a queued user message.
type CancelAsyncMessageRequest struct {
	MessageUUID string `json:"message_uuid"`
}

// SeedReadStateRequest marks a file as read so Edit works without Read.
type SeedReadStateRequest struct {
	Path  string `json:"path"`
	Mtime int64  `json:"mtime"`
}

// ReloadPluginsRequest reloads plugins.
type ReloadPluginsRequest struct{}

// GenericRequest sends any subtype this package does not model.
type GenericRequest struct {
	Name   string
	Params map[string]any
}

func (InitializeRequest) Subtype() string           { return "initialize" }
func (InterruptRequest) Subtype() string            { return "interrupt" }
func (SetModelRequest) Subtype() string             { return "set_model" }
func (SetPermissionModeRequest) Subtype() string    { return "set_permission_mode" }
func (SetMaxThinkingTokensRequest) Subtype() string { return "set_max_thinking_tokens" }
func (MCPStatusRequest) Subtype() string            { return "mcp_status" }
func (MCPSetServersRequest) Subtype() string        { return "mcp_set_servers" }
func (MCPReconnectRequest) Subtype() string         { return "mcp_reconnect" }
func (MCPToggleRequest) Subtype() string            { return "mcp_toggle" }
func (RewindFilesRequest) Subtype() string          { return "rewind_files" }
func (StopTaskRequest) Subtype() string             { return "stop_task" }
func (GetContextUsageRequest) Subtype() string      { return "get_context_usage" }
func (GetSettingsRequest) Subtype() string          { return "get_settings" }
func (ApplyFlagSettingsRequest) Subtype() string    { return "apply_flag_settings" }
func (CancelAsyncMessageRequest) Subtype() string   { return "cancel_async_message" }
func (SeedReadStateRequest) Subtype() string        { return "seed_read_state" }
func (ReloadPluginsRequest) Subtype() string        { return "reload_plugins" }
func (g GenericRequest) Subtype() string            { return g.Name }

// MarshalJSON writes Params as the request object.
func (g GenericRequest) MarshalJSON() ([]byte, error) {
	if g.Params == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(g.Params)
}
