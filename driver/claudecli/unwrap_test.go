package claudecli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tetherhq/tether/sandbox"
)

func newTestRewriter() *bashRewriter {
	return &bashRewriter{policy: sandbox.Policy{Network: true}, produced: map[string]wrapping{}}
}

// commandsIn decodes line and returns every "command" string in it.
func commandsIn(t *testing.T, line []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		t.Fatalf("unwrapped line is not JSON: %v\n%s", err, line)
	}
	var found []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if s, ok := c.(string); ok && k == "command" {
					found = append(found, s)
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(v)
	return found
}

func TestUnwrapPutsBackTheModelsCommand(t *testing.T) {
	b := newTestRewriter()
	model := `echo "probe-$((6*7))" 'it''s' <a & b> ünï` + "\n\ttab"
	wrapped := b.wrap(model)
	if !strings.Contains(wrapped, sandbox.WrappedMarker) || wrapped == model {
		t.Fatalf("the rewriter did not wrap: %q", wrapped)
	}
	enc := func(v any) string {
		out, err := encodeLine(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	input := map[string]any{"command": wrapped, "description": "probe"}
	lines := map[string]string{
		"can_use_tool": enc(map[string]any{"type": "control_request", "request_id": "r1",
			"request": map[string]any{"subtype": "can_use_tool", "tool_name": "Bash", "input": input}}),
		"hook_callback": enc(map[string]any{"type": "control_request", "request_id": "r2",
			"request": map[string]any{"subtype": "hook_callback", "callback_id": "hook_0",
				"input": map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": input}}}),
		"result": enc(map[string]any{"type": "result", "subtype": "success", "permission_denials": []any{
			map[string]any{"tool_name": "Bash", "tool_use_id": "t1", "tool_input": input}}}),
		// The same command escaped otherwise than Go escapes it (as
		// another encoder may): only the decoding path can find it.
		"escaped otherwise": strings.Replace(enc(map[string]any{"type": "result", "permission_denials": []any{
			map[string]any{"tool_input": input}}}), "ü", `\u00fc`, 1),
	}
	for name, line := range lines {
		t.Run(name, func(t *testing.T) {
			out := b.unwrap([]byte(line))
			if strings.Contains(string(out), sandbox.WrappedMarker) {
				t.Fatalf("the wrapper is still in the line:\n%s", out)
			}
			cmds := commandsIn(t, out)
			if len(cmds) != 1 || cmds[0] != model {
				t.Fatalf("commands = %q, want [%q]", cmds, model)
			}
		})
	}
}

func TestUnwrapLeavesOtherLinesAlone(t *testing.T) {
	b := newTestRewriter()
	b.wrap("ls")
	for _, line := range []string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}`,
		// The marker alone, as a model might write it: not a command
		// this rewriter made.
		`{"type":"assistant","message":{"content":[{"type":"text","text":"bwrap ` + sandbox.WrappedMarker + `"}]}}`,
		`not json ` + sandbox.WrappedMarker,
	} {
		if out := b.unwrap([]byte(line)); string(out) != line {
			t.Errorf("unwrap changed %s\ninto %s", line, out)
		}
	}
	var none *bashRewriter // no sandbox: nothing to unwrap
	line := []byte(`{"type":"result"}`)
	if out := none.unwrap(line); string(out) != string(line) {
		t.Errorf("a nil rewriter changed the line: %s", out)
	}
}

// A command wrapped for an answer of the host is wrapped once, and maps
// back to what the host sent.
func TestWrapIsIdempotentAndReversible(t *testing.T) {
	b := newTestRewriter()
	w := b.wrap("pwd")
	if again := b.wrap(w); again != w {
		t.Fatalf("wrapping a wrapped command wrapped it again:\n%s", again)
	}
	if orig, ok := b.original(w); !ok || orig != "pwd" {
		t.Fatalf("original(%q) = %q, %v", w, orig, ok)
	}
}
