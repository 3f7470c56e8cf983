package claude

import (
	"encoding/json"

	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// PermissionRequest is the CLI asking whether a tool may run.
type PermissionRequest struct {
	ToolName    string
	Input       json.RawMessage
	ToolUseID   string
	Suggestions []PermissionUpdate
	BlockedPath string
	Reason      string
	AgentID     string
	Title       string
	DisplayName string
	Description string
}

// PermissionResult is Allow or Deny.
type PermissionResult interface {
	response(original json.RawMessage) cc.PermissionResponse
}

// Allow lets the tool run, optionally with changed input and new rules.
type Allow struct {
	UpdatedInput       json.RawMessage
	UpdatedPermissions []PermissionUpdate
}

// Deny refuses the tool; Interrupt also stops the turn.
type Deny struct {
	Message   string
	Interrupt bool
}

func (a Allow) response(original json.RawMessage) cc.PermissionResponse {
	input := a.UpdatedInput
	if len(input) == 0 {
		// The CLI rejects an allow without updatedInput.
		input = original
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	return cc.PermissionResponse{Behavior: "allow", UpdatedInput: input, UpdatedPermissions: a.UpdatedPermissions}
}

func (d Deny) response(json.RawMessage) cc.PermissionResponse {
	msg := d.Message
	if msg == "" {
		msg = "denied by the host"
	}
	return cc.PermissionResponse{Behavior: "deny", Message: msg, Interrupt: d.Interrupt}
}

func permissionRequestFrom(r cc.CanUseToolRequest) PermissionRequest {
	return PermissionRequest{
		ToolName: r.ToolName, Input: r.Input, ToolUseID: r.ToolUseID,
		Suggestions: r.PermissionSuggestions, BlockedPath: r.BlockedPath,
		Reason: r.DecisionReason, AgentID: r.AgentID, Title: r.Title,
		DisplayName: r.DisplayName, Description: r.Description,
	}
}
