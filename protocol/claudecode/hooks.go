package claudecode

import "encoding/json"

// Hook events the CLI can call back for.
const (
	HookPreToolUse         = "PreToolUse"
	HookPostToolUse        = "PostToolUse"
	HookPostToolUseFailure = "PostToolUseFailure"
	HookUserPromptSubmit   = "UserPromptSubmit"
	HookStop               = "Stop"
	HookStopFailure        = "StopFailure"
	HookSubagentStart      = "SubagentStart"
	HookSubagentStop       = "SubagentStop"
	HookPreCompact         = "PreCompact"
	HookPostCompact        = "PostCompact"
	HookNotification       = "Notification"
	HookPermissionRequest  = "PermissionRequest"
	HookSessionStart       = "SessionStart"
	HookSessionEnd         = "SessionEnd"
	HookSetup              = "Setup"
	HookTeammateIdle       = "TeammateIdle"
	HookTaskCompleted      = "TaskCompleted"
	HookElicitation        = "Elicitation"
	HookElicitationResult  = "ElicitationResult"
	HookConfigChange       = "ConfigChange"
	HookWorktreeCreate     = "WorktreeCreate"
	HookWorktreeRemove     = "WorktreeRemove"
	HookInstructionsLoaded = "InstructionsLoaded"
	HookMessageDisplay     = "MessageDisplay"
	HookDirectoryAdded     = "DirectoryAdded"
	HookUserPromptExpand   = "UserPromptExpansion"
)

// HookEvents lists every event above, in the CLI's documentation order.
func HookEvents() []string {
	return []string{
		HookPreToolUse, HookPostToolUse, HookPostToolUseFailure, HookUserPromptSubmit,
		HookStop, HookStopFailure, HookSubagentStart, HookSubagentStop, HookPreCompact,
		HookPostCompact, HookNotification, HookPermissionRequest, HookSessionStart,
		HookSessionEnd, HookSetup, HookTeammateIdle, HookTaskCompleted, HookElicitation,
		HookElicitationResult, HookConfigChange, HookWorktreeCreate, HookWorktreeRemove,
		HookInstructionsLoaded, HookMessageDisplay, HookDirectoryAdded, HookUserPromptExpand,
	}
}

// HookInput is what a hook callback receives. The common fields and the
// fields of the common events are decoded; Raw has everything.
type HookInput struct {
	HookEventName  string `json:"hook_event_name"`
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode,omitempty"`
	AgentID        string `json:"agent_id,omitempty"`
	AgentType      string `json:"agent_type,omitempty"`

	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	Error        string          `json:"error,omitempty"`
	IsInterrupt  bool            `json:"is_interrupt,omitempty"`

	Prompt               string `json:"prompt,omitempty"`
	StopHookActive       bool   `json:"stop_hook_active,omitempty"`
	LastAssistantMessage string `json:"last_assistant_message,omitempty"`
	Trigger              string `json:"trigger,omitempty"`
	CustomInstructions   string `json:"custom_instructions,omitempty"`
	Message              string `json:"message,omitempty"`
	Title                string `json:"title,omitempty"`
	NotificationType     string `json:"notification_type,omitempty"`
	Reason               string `json:"reason,omitempty"`
	Source               string `json:"source,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// ParseHookInput decodes a hook_callback input.
func ParseHookInput(raw json.RawMessage) (HookInput, error) {
	var in HookInput
	if len(raw) == 0 {
		return in, nil
	}
	err := json.Unmarshal(raw, &in)
	in.Raw = raw
	return in, err
}

// HookOutput is a hook's answer. Zero value = carry on unchanged.
type HookOutput struct {
	Continue       *bool  `json:"continue,omitempty"`
	SuppressOutput bool   `json:"suppressOutput,omitempty"`
	StopReason     string `json:"stopReason,omitempty"`
	// Decision "block" blocks (PostToolUse, Stop, UserPromptSubmit, …).
	Decision      string `json:"decision,omitempty"`
	SystemMessage string `json:"systemMessage,omitempty"`
	Reason        string `json:"reason,omitempty"`
	// Async defers the hook; AsyncTimeout is in milliseconds.
	Async              bool                `json:"async,omitempty"`
	AsyncTimeout       int                 `json:"asyncTimeout,omitempty"`
	HookSpecificOutput *HookSpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// HookSpecificOutput carries per-event answers. For PreToolUse:
// PermissionDecision allow, deny, ask or defer, and UpdatedInput to rewrite
// the tool's input.
type HookSpecificOutput struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string          `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             json.RawMessage `json:"updatedInput,omitempty"`
	AdditionalContext        string          `json:"additionalContext,omitempty"`
	UpdatedToolOutput        json.RawMessage `json:"updatedToolOutput,omitempty"`
	// Decision answers PermissionRequest hooks.
	Decision json.RawMessage `json:"decision,omitempty"`
}
