package claude

import (
	"context"

	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// AskEveryTool is a PreToolUse hook that sends every tool call to the
// permission callback (CanUseTool), the ones the CLI deems safe included.
//
// Without it the CLI decides some calls itself: in the default permission
// mode it runs read-only commands (echo, pwd), reads files in its working
// directory and uses the tools in AllowedTools without asking, so a
// CanUseTool that denies everything does not stop those. Register it for
// every tool:
//
//	opts.Hooks = map[string][]claude.HookMatcher{"PreToolUse": {{Hooks: []claude.HookFunc{claude.AskEveryTool}}}}
//
// Deny rules (DisallowedTools) still refuse without asking, and so does a
// hook of yours that denies; with a runner the hook runs in this process.
func AskEveryTool(context.Context, HookInput) (HookOutput, error) {
	return HookOutput{HookSpecificOutput: &HookSpecific{
		HookEventName: cc.HookPreToolUse, PermissionDecision: "ask",
		PermissionDecisionReason: "every tool call goes to the approver",
	}}, nil
}
