package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/console"
	cc "github.com/tetherhq/tether/protocol/claudecode"
	"github.com/tetherhq/tether/runner/sandbox"
)

// probeCommand is what the model asks for; the runner runs it wrapped in a
// nested sandbox, and nobody outside the runner may see the wrapper.
const probeCommand = "echo probe-$((6*7))"

// commandOf reads a Bash input's command.
func commandOf(t *testing.T, input json.RawMessage) string {
	t.Helper()
	var in struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		t.Fatalf("tool input %s: %v", input, err)
	}
	return in.Command
}

// deniedCommands are the Bash commands a result line lists as denied.
func deniedCommands(t *testing.T, result map[string]any) []string {
	t.Helper()
	var cmds []string
	denials, _ := result["permission_denials"].([]any)
	for _, d := range denials {
		in, _ := d.(map[string]any)["tool_input"].(map[string]any)
		cmd, _ := in["command"].(string)
		cmds = append(cmds, cmd)
	}
	return cmds
}

// On a sandboxed runner, approvers see the model's command: the SDK's
// CanUseTool, the host's own hooks, permission denials and every message
// the host receives.
func TestRealCLIRunnerApproverSeesModelInput(t *testing.T) {
	timed(t)
	tr := startRunner(t, true)

	t.Run("SDK", func(t *testing.T) {
		timed(t)
		opts, _ := relayOpts(tr)
		opts.AllowedTools, opts.PermissionMode = nil, claude.PermissionDefault
		var mu sync.Mutex
		var asked, hooked []string
		opts.CanUseTool = func(_ context.Context, r claude.PermissionRequest) (claude.PermissionResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, commandOf(t, r.Input))
			return claude.Deny{Message: "host says no"}, nil
		}
		observe := func(_ context.Context, in claude.HookInput) (claude.HookOutput, error) {
			mu.Lock()
			defer mu.Unlock()
			hooked = append(hooked, in.HookEventName+" "+commandOf(t, in.ToolInput))
			return claude.HookOutput{}, nil
		}
		opts.Hooks = map[string][]claude.HookMatcher{
			cc.HookPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{observe}}},
		}
		var result *claude.ResultMessage
		for msg, err := range claude.Query(testCtx(t), bashPrompt(probeCommand), opts) {
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(msg.Raw(), []byte(sandbox.WrappedMarker)) {
				t.Errorf("the host received the sandbox's wrapper: %s", msg.Raw())
			}
			if r, ok := msg.(*claude.ResultMessage); ok {
				result = r
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(asked) != 1 || asked[0] != probeCommand {
			t.Errorf("CanUseTool saw %q, want [%q]", asked, probeCommand)
		}
		if len(hooked) == 0 {
			t.Error("the host's PreToolUse hook was not called")
		}
		for _, h := range hooked {
			if h != cc.HookPreToolUse+" "+probeCommand {
				t.Errorf("the host's hook saw %q", h)
			}
		}
		if result == nil {
			t.Fatal("no result")
		}
		var raw map[string]any
		if err := json.Unmarshal(result.Raw(), &raw); err != nil {
			t.Fatal(err)
		}
		if got := deniedCommands(t, raw); len(got) != 1 || got[0] != probeCommand {
			t.Errorf("permission_denials name %q, want [%q]", got, probeCommand)
		}
	})

	// An allowed call runs sandboxed, and what the host sees after it (its
	// PostToolUse hook, the tool's result) names the model's command.
	t.Run("SDKAllowed", func(t *testing.T) {
		timed(t)
		opts, _ := relayOpts(tr)
		opts.AllowedTools, opts.PermissionMode = nil, claude.PermissionDefault
		var mu sync.Mutex
		var asked, hooked []string
		opts.CanUseTool = func(_ context.Context, r claude.PermissionRequest) (claude.PermissionResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, commandOf(t, r.Input))
			return claude.Allow{}, nil
		}
		observe := func(_ context.Context, in claude.HookInput) (claude.HookOutput, error) {
			mu.Lock()
			defer mu.Unlock()
			hooked = append(hooked, in.HookEventName+" "+commandOf(t, in.ToolInput))
			return claude.HookOutput{}, nil
		}
		bash := []claude.HookMatcher{{Matcher: "Bash", Hooks: []claude.HookFunc{observe}}}
		opts.Hooks = map[string][]claude.HookMatcher{cc.HookPreToolUse: bash, cc.HookPostToolUse: bash}
		var result *claude.ResultMessage
		for msg, err := range claude.Query(testCtx(t), bashPrompt(probeCommand), opts) {
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(msg.Raw(), []byte(sandbox.WrappedMarker)) {
				t.Errorf("the host received the sandbox's wrapper: %s", msg.Raw())
			}
			if r, ok := msg.(*claude.ResultMessage); ok {
				result = r
			}
		}
		if result == nil || result.Result != "tool said: probe-42" {
			t.Fatalf("result = %+v", result)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{cc.HookPreToolUse + " " + probeCommand, cc.HookPostToolUse + " " + probeCommand}
		if len(asked) != 1 || asked[0] != probeCommand || strings.Join(hooked, "|") != strings.Join(want, "|") {
			t.Errorf("CanUseTool saw %q, hooks saw %q; want %q and %q", asked, hooked, probeCommand, want)
		}
	})

	// The runner speaks the control protocol itself; a session whose
	// permissions refuse Bash reports the denial with the model's command.
	t.Run("DefaultMode", func(t *testing.T) {
		timed(t)
		c, _ := seedSession(t, tr, newWorkspaceID("appr"), map[string]any{"model": "claude-sonnet-4-5", "permission_mode": "default"})
		res, lines := c.turn("q1", bashPrompt(probeCommand))
		c.stop()
		for _, l := range lines {
			if b, _ := json.Marshal(l); bytes.Contains(b, []byte(sandbox.WrappedMarker)) {
				t.Errorf("the host received the sandbox's wrapper: %s", b)
			}
		}
		if got := deniedCommands(t, res); len(got) != 1 || got[0] != probeCommand {
			t.Errorf("permission_denials name %q, want [%q]", got, probeCommand)
		}
	})

	// What `tether run --runner` shows a person on a terminal.
	t.Run("Console", func(t *testing.T) {
		timed(t)
		opts, _ := relayOpts(tr)
		opts.AllowedTools, opts.PermissionMode = nil, claude.PermissionDefault
		var out, errOut syncBuffer
		cfg := console.Config{Options: opts, Prompt: bashPrompt(probeCommand), Out: &out, Err: &errOut,
			In: strings.NewReader("n\n"), InTerminal: true, Approve: console.ApproveAsk}
		code := console.Run(testCtx(t), cfg)
		question := errOut.String()
		if code != console.ExitOK || !strings.Contains(question, probeCommand) || strings.Contains(question, "bwrap") {
			t.Fatalf("exit %d; the approval question:\n%s\noutput:\n%s", code, question, out.String())
		}
		if strings.Contains(out.String(), "probe-42") {
			t.Errorf("the denied command ran:\n%s", out.String())
		}
	})
}
