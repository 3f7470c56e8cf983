package claude

import (
	"context"
	"sort"
	"strconv"
	"time"

	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// HookFunc runs when the CLI reaches a hook point. Return the zero
// HookOutput to let things go on unchanged.
type HookFunc func(ctx context.Context, in HookInput) (HookOutput, error)

// HookMatcher binds hook functions to the tools a matcher selects
// ("Bash", "Write|Edit", "" for all).
type HookMatcher struct {
	Matcher string
	Hooks   []HookFunc
	// Timeout is the CLI's limit for the callback (default 60 s).
	Timeout time.Duration
}

// hookRegistry assigns callback ids for initialize.
type hookRegistry struct {
	byID   map[string]HookFunc
	config map[string][]cc.HookMatcherConfig
}

func newHookRegistry(hooks map[string][]HookMatcher) hookRegistry {
	r := hookRegistry{byID: map[string]HookFunc{}}
	if len(hooks) == 0 {
		return r
	}
	r.config = map[string][]cc.HookMatcherConfig{}
	events := make([]string, 0, len(hooks))
	for ev := range hooks {
		events = append(events, ev)
	}
	sort.Strings(events) // stable ids across runs
	for _, ev := range events {
		for _, m := range hooks[ev] {
			cfg := cc.HookMatcherConfig{Matcher: m.Matcher, Timeout: m.Timeout.Seconds()}
			for _, fn := range m.Hooks {
				id := "hook_" + strconv.Itoa(len(r.byID))
				r.byID[id] = fn
				cfg.HookCallbackIDs = append(cfg.HookCallbackIDs, id)
			}
			r.config[ev] = append(r.config[ev], cfg)
		}
	}
	return r
}

// DenyTool is a PreToolUse answer that blocks the call.
func DenyTool(reason string) HookOutput {
	return HookOutput{HookSpecificOutput: &HookSpecific{
		HookEventName: cc.HookPreToolUse, PermissionDecision: "deny", PermissionDecisionReason: reason,
	}}
}

// RewriteToolInput is a PreToolUse answer that allows the call with new input.
func RewriteToolInput(input []byte, reason string) HookOutput {
	return HookOutput{HookSpecificOutput: &HookSpecific{
		HookEventName: cc.HookPreToolUse, PermissionDecision: "allow",
		PermissionDecisionReason: reason, UpdatedInput: input,
	}}
}
