package claudecode

// SessionOptions are the options a host may give a runner for a Claude Code
// session: protocol v1's session_opts. Anything else (a CLI path, an
// environment, settings files, extra arguments) is the runner's to decide,
// and a runner refuses it.
type SessionOptions struct {
	Model                  string                     `json:"model,omitempty"`
	FallbackModel          string                     `json:"fallback_model,omitempty"`
	SystemPrompt           *string                    `json:"system_prompt,omitempty"`
	AppendSystemPrompt     string                     `json:"append_system_prompt,omitempty"`
	MaxTurns               int                        `json:"max_turns,omitempty"`
	MaxBudgetUSD           float64                    `json:"max_budget_usd,omitempty"`
	PermissionMode         string                     `json:"permission_mode,omitempty"`
	AllowedTools           []string                   `json:"allowed_tools,omitempty"`
	DisallowedTools        []string                   `json:"disallowed_tools,omitempty"`
	Tools                  []string                   `json:"tools,omitempty"`
	IncludePartialMessages bool                       `json:"include_partial_messages,omitempty"`
	Effort                 string                     `json:"effort,omitempty"`
	Betas                  []string                   `json:"betas,omitempty"`
	Agents                 map[string]AgentDefinition `json:"agents,omitempty"`
	// Cwd is the directory the agent works in, relative to the workspace
	// and inside it; it must exist. Empty means the workspace itself.
	Cwd string `json:"cwd,omitempty"`
	// AddDirs are extra directories, relative to the workspace and inside it.
	AddDirs []string `json:"add_dirs,omitempty"`
	// ToolNetwork asks for network in the agent's Bash commands, if the
	// runner's policy allows it at all.
	ToolNetwork bool `json:"tool_network,omitempty"`
	// SDKMCPServers are MCP servers that run in the host's process (relay
	// sessions): the CLI reaches them through the control protocol.
	SDKMCPServers []string `json:"sdk_mcp_servers,omitempty"`
	// PermissionPromptStdio sends permission prompts to the host (relay
	// sessions) as can_use_tool requests.
	PermissionPromptStdio bool `json:"permission_prompt_stdio,omitempty"`
}
