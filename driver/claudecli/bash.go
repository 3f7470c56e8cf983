package claudecli

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/sandbox"
)

// bashRewriter takes the network away from the agent's Bash commands by
// rewriting each one, through a PreToolUse hook, to run in a nested
// sandbox without a network namespace of its own.
//
// The wrapping is the runner's business: whatever the host sees (approval
// requests, its own hooks' inputs, permission denials) carries the
// model's own command, so a person approves what they can read. unwrap
// maps a line back before it leaves the runner.
type bashRewriter struct {
	policy sandbox.Policy

	mu sync.Mutex
	// produced maps each command this rewriter made (already sandboxed)
	// to the command it wrapped.
	produced map[string]wrapping
}

// wrapping is one command the rewriter made, with the model's command it
// wrapped, and both as JSON strings (as they stand in a line).
type wrapping struct {
	original              string
	wrappedJSON, origJSON []byte
}

func (d *Driver) bashRewrite(policy *sandbox.Policy, toolNetwork bool) *bashRewriter {
	if policy == nil || toolNetwork {
		return nil
	}
	return &bashRewriter{policy: *policy, produced: map[string]wrapping{}}
}

// wrap returns cmd sandboxed: unchanged if this rewriter made it (so a
// command is never wrapped twice), else wrapped.
func (b *bashRewriter) wrap(cmd string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.produced[cmd]; ok {
		return cmd
	}
	out := sandbox.BashCommand(b.policy, cmd)
	if out != cmd {
		w, err1 := encodeLine(out)
		o, err2 := encodeLine(cmd)
		if err1 == nil && err2 == nil {
			b.produced[out] = wrapping{original: cmd, wrappedJSON: w, origJSON: o}
		}
	}
	return out
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
	fields["command"] = b.wrap(cmd)
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

// sandboxUpdatedInputs wraps the command of every "updatedInput" object in
// a host's answer about a Bash call (hook outputs, can_use_tool results,
// at any depth). An updatedInput without a string command gets original,
// the command the call was about, wrapped: whichever input the CLI ends
// up using, its command runs in the nested sandbox.
func (b *bashRewriter) sandboxUpdatedInputs(v any, original string) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if in, ok := child.(map[string]any); ok && k == "updatedInput" {
				cmd, ok := in["command"].(string)
				if !ok {
					cmd = original
				}
				in["command"] = b.wrap(cmd)
				continue
			}
			b.sandboxUpdatedInputs(child, original)
		}
	case []any:
		for _, child := range v {
			b.sandboxUpdatedInputs(child, original)
		}
	}
}
