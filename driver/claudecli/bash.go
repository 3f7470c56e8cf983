package claudecli

import (
	"context"
	"encoding/json"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/runner/sandbox"
)

// bashRewriter takes the network away from the agent's Bash commands by
// rewriting each one, through a PreToolUse hook, to run in a nested
// sandbox without a network namespace of its own.
type bashRewriter struct {
	policy sandbox.Policy
}

func (d *Driver) bashRewrite(policy *sandbox.Policy, toolNetwork bool) *bashRewriter {
	if policy == nil || toolNetwork {
		return nil
	}
	return &bashRewriter{policy: *policy}
}

// rewrite returns the tool input with its command wrapped, or nil when the
// input has no command.
func (b *bashRewriter) rewrite(input json.RawMessage) json.RawMessage {
	var fields map[string]any
	if json.Unmarshal(input, &fields) != nil {
		return nil
	}
	cmd, ok := fields["command"].(string)
	if !ok {
		return nil
	}
	fields["command"] = sandbox.BashCommand(b.policy, cmd)
	out, err := json.Marshal(fields)
	if err != nil {
		return nil
	}
	return out
}

func (b *bashRewriter) hook(_ context.Context, in claude.HookInput) (claude.HookOutput, error) {
	if in.ToolName != "Bash" {
		return claude.HookOutput{}, nil
	}
	updated := b.rewrite(in.ToolInput)
	if updated == nil {
		return claude.DenyTool("tether: Bash input without a command"), nil
	}
	// No permission decision: the rewrite must not approve a command the
	// session's permission rules would refuse.
	return claude.HookOutput{HookSpecificOutput: &claude.HookSpecific{
		HookEventName: "PreToolUse", UpdatedInput: updated,
	}}, nil
}
