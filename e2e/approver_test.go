package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/cli/runview"
	"github.com/tetherhq/tether/internal/testing/testenv"
	cc "github.com/tetherhq/tether/protocol/claudecode"
	"github.com/tetherhq/tether/sandbox"
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

// watched is a relay session on a sandboxed runner that records the Bash
// commands the host's CanUseTool and hooks were shown.
type watched struct {
	mu            sync.Mutex
	asked, hooked []string
	opts          claude.Options
	answer        claude.PermissionResult
}

func watch(t *testing.T, tr *testRunner, answer claude.PermissionResult, hookEvents ...string) *watched {
	w := &watched{answer: answer}
	w.opts, _ = relayOpts(tr)
	w.opts.AllowedTools, w.opts.PermissionMode = nil, claude.PermissionDefault
	w.opts.CanUseTool = func(_ context.Context, r claude.PermissionRequest) (claude.PermissionResult, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.asked = append(w.asked, commandOf(t, r.Input))
		return w.answer, nil
	}
	observe := func(_ context.Context, in claude.HookInput) (claude.HookOutput, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.hooked = append(w.hooked, in.HookEventName+" "+commandOf(t, in.ToolInput))
		return claude.HookOutput{}, nil
	}
	w.opts.Hooks = map[string][]claude.HookMatcher{}
	for _, ev := range hookEvents {
		w.opts.Hooks[ev] = []claude.HookMatcher{{Matcher: "Bash", Hooks: []claude.HookFunc{observe}}}
	}
	return w
}

// run sends prompt, fails on any message that holds the sandbox's wrapper,
// and returns the result.
func (w *watched) run(t *testing.T, prompt string) *claude.ResultMessage {
	t.Helper()
	var result *claude.ResultMessage
	for msg, err := range claude.Query(testCtx(t), prompt, w.opts) {
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
	if result == nil {
		t.Fatal("no result")
	}
	return result
}

// seen returns what CanUseTool and the hooks were shown.
func (w *watched) seen() (asked, hooked []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.asked), slices.Clone(w.hooked)
}

// On a sandboxed runner, approvers see the model's command: the SDK's
// CanUseTool, the host's own hooks, permission denials and every message
// the host receives.
func TestRealCLIRunnerApproverSeesModelInput(t *testing.T) {
	timed(t)
	tr := startRunner(t, true)

	t.Run("SDKDenied", func(t *testing.T) {
		timed(t)
		w := watch(t, tr, claude.Deny{Message: "host says no"}, cc.HookPreToolUse)
		result := w.run(t, bashPrompt(probeCommand))
		asked, hooked := w.seen()
		want := []string{cc.HookPreToolUse + " " + probeCommand}
		if !slices.Equal(asked, []string{probeCommand}) || !slices.Equal(hooked, want) {
			t.Errorf("CanUseTool saw %q, hooks saw %q; want %q and %q", asked, hooked, probeCommand, want)
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
		w := watch(t, tr, claude.Allow{}, cc.HookPreToolUse, cc.HookPostToolUse)
		if result := w.run(t, bashPrompt(probeCommand)); result.Result != "tool said: probe-42" {
			t.Fatalf("result = %q", result.Result)
		}
		asked, hooked := w.seen()
		want := []string{cc.HookPreToolUse + " " + probeCommand, cc.HookPostToolUse + " " + probeCommand}
		if !slices.Equal(asked, []string{probeCommand}) || !slices.Equal(hooked, want) {
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
		var out, errOut testenv.SyncBuffer
		cfg := runview.Config{Options: opts, Prompt: bashPrompt(probeCommand), Out: &out, Err: &errOut,
			In: strings.NewReader("n\n"), InTerminal: true, Approve: runview.ApproveAsk}
		code := runview.Run(testCtx(t), cfg)
		question := errOut.String()
		if code != runview.ExitOK || !strings.Contains(question, probeCommand) || strings.Contains(question, "bwrap") {
			t.Fatalf("exit %d; the approval question:\n%s\noutput:\n%s", code, question, out.String())
		}
		if strings.Contains(out.String(), "probe-42") {
			t.Errorf("the denied command ran:\n%s", out.String())
		}
	})
}
