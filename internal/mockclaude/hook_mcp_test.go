package mockclaude_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/mockclaude"
)

func TestHookCallbackRoundTrip(t *testing.T) {
	dir := t.TempDir()
	h := start(t, mockclaude.Config{Scenario: "hook", Cwd: dir, Args: sdkArgs()})
	h.initialize(map[string]any{"hooks": map[string]any{
		"PreToolUse": []any{
			map[string]any{"matcher": "Bash", "hookCallbackIds": []string{"hook_0"}},
			map[string]any{"matcher": "Edit|Write", "hookCallbackIds": []string{"hook_1"}},
		},
		"PostToolUse": []any{map[string]any{"hookCallbackIds": []string{"hook_2"}}},
	}})
	h.user("run something")
	sid := h.until(isType("system", "init"))["session_id"]
	req := h.until(isType("control_request", ""))
	r := req["request"].(map[string]any)
	in, _ := r["input"].(map[string]any)
	if r["subtype"] != "hook_callback" || r["callback_id"] != "hook_0" || r["tool_use_id"] == nil ||
		in["hook_event_name"] != "PreToolUse" || in["tool_name"] != "Bash" || get(in, "tool_input", "command") != "echo hi" ||
		in["tool_use_id"] != r["tool_use_id"] || in["session_id"] != sid || in["cwd"] != dir || in["transcript_path"] == nil {
		t.Fatalf("hook_callback request = %v", req)
	}
	h.answer(req["request_id"].(string), map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no shell today",
	}})
	tr := h.untilType("user")
	block := get(tr, "message", "content").([]any)[0]
	if get(block, "is_error") != true || !strings.Contains(get(block, "content").(string), "no shell today") {
		t.Errorf("tool_result = %v", tr)
	}
	res := h.untilType("result")
	text, _ := res["result"].(string)
	if !strings.Contains(text, "hook hook_0 returned") || !strings.Contains(text, `"permissionDecision":"deny"`) || strings.Contains(text, "hook_1") {
		t.Errorf("final text = %q", text)
	}
	if code := h.closeAndWait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	for _, m := range h.messages() {
		if m["type"] == "control_request" && get(m, "request", "callback_id") != "hook_0" {
			t.Errorf("unexpected request %v", m)
		}
	}
	h.checkAllTyped()
}

func TestHookErrorAnswerIsReported(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "hook", Args: sdkArgs()})
	h.initialize(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"hookCallbackIds": []string{"hook_7"}}}}})
	h.user("go")
	req := h.until(isType("control_request", ""))
	h.send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "error", "request_id": req["request_id"], "error": "hook exploded"}})
	res := h.untilType("result")
	if text := res["result"].(string); !strings.Contains(text, "hook hook_7 failed: hook exploded") {
		t.Errorf("final text = %q", text)
	}
	h.closeAndWait()
}

func TestMCPRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		init map[string]any
	}{
		{"initialize", nil, map[string]any{"sdkMcpServers": []string{"calc"}}},
		{"mcp-config", []string{"--mcp-config", `{"mcpServers":{"calc":{"type":"sdk","name":"calc"},"other":{"type":"stdio","command":"x"}}}`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, mockclaude.Config{Scenario: "mcp", ToolArgs: `{"a":2,"b":3}`, Args: sdkArgs(tc.args...)})
			h.initialize(tc.init)
			h.user("add")
			sys := h.until(isType("system", "init"))
			if s, _ := sys["mcp_servers"].([]any); len(s) != 1 || get(s[0], "name") != "calc" {
				t.Errorf("init mcp_servers = %v", sys["mcp_servers"])
			}
			var methods []string
			for len(methods) < 4 {
				req := h.until(isType("control_request", ""))
				r := req["request"].(map[string]any)
				if r["subtype"] != "mcp_message" || r["server_name"] != "calc" || get(r, "message", "jsonrpc") != "2.0" {
					t.Fatalf("mcp request = %v", req)
				}
				method, _ := get(r, "message", "method").(string)
				methods = append(methods, method)
				id := get(r, "message", "id")
				var result any
				switch method {
				case "initialize":
					result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "calc", "version": "1.0.0"}}
				case "notifications/initialized":
					if id != nil {
						t.Errorf("notification has an id: %v", r["message"])
					}
					result = map[string]any{}
				case "tools/list":
					result = map[string]any{"tools": []any{map[string]any{"name": "add", "inputSchema": map[string]any{"type": "object"}}}}
				case "tools/call":
					args, _ := json.Marshal(get(r, "message", "params", "arguments"))
					if get(r, "message", "params", "name") != "add" || string(args) != `{"a":2,"b":3}` {
						t.Errorf("tools/call params = %v", get(r, "message", "params"))
					}
					result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "5"}}, "isError": false}
				}
				h.answer(req["request_id"].(string), map[string]any{"mcp_response": map[string]any{"jsonrpc": "2.0", "id": id, "result": result}})
			}
			if strings.Join(methods, ",") != "initialize,notifications/initialized,tools/list,tools/call" {
				t.Errorf("methods = %v", methods)
			}
			res := h.untilType("result")
			if text := res["result"].(string); !strings.Contains(text, "mcp__calc__add returned: 5") {
				t.Errorf("final text = %q", text)
			}
			var sawToolUse bool
			for _, m := range h.messages() {
				if c, _ := get(m, "message", "content").([]any); m["type"] == "assistant" && len(c) == 1 && get(c[0], "name") == "mcp__calc__add" {
					sawToolUse = true
				}
			}
			if !sawToolUse {
				t.Error("no assistant tool_use for mcp__calc__add")
			}
			if code := h.closeAndWait(); code != 0 {
				t.Errorf("exit code %d", code)
			}
			h.checkAllTyped()
		})
	}
}

func TestMCPWithoutServers(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "mcp", Args: sdkArgs()})
	h.initialize(nil)
	h.user("add")
	if text := h.untilType("result")["result"].(string); !strings.Contains(text, "No SDK MCP servers") {
		t.Errorf("final text = %q", text)
	}
	h.closeAndWait()
}
