package mockclaude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/mockclaude"
)

func TestDemoAllowWritesFile(t *testing.T) {
	dir := t.TempDir()
	h := start(t, mockclaude.Config{Cwd: dir, Args: sdkArgs("--model=claude-sonnet-4-5", "--permission-prompt-tool", "stdio", "--include-partial-messages")})

	init := h.initialize(nil)
	if init["subtype"] != "success" {
		t.Fatalf("initialize: %v", init)
	}
	payload, _ := init["response"].(map[string]any)
	for _, k := range []string{"commands", "agents", "models", "account", "output_style", "available_output_styles", "pid"} {
		if _, ok := payload[k]; !ok {
			t.Errorf("initialize response lacks %q: %v", k, payload)
		}
	}

	h.user("hello mock")
	sys := h.until(isType("system", "init"))
	sid, _ := sys["session_id"].(string)
	if sys["model"] != "claude-sonnet-4-5" || sys["cwd"] != dir || sid == "" || sys["permissionMode"] != "default" {
		t.Errorf("system/init = %v", sys)
	}

	req := h.until(func(m map[string]any) bool {
		return m["type"] == "control_request" && get(m, "request", "subtype") == "can_use_tool"
	})
	reqID, _ := req["request_id"].(string)
	r := req["request"].(map[string]any)
	want := filepath.Join(dir, "hello.txt")
	if reqID == "" || r["tool_name"] != "Write" || r["display_name"] != "Write" || get(r, "input", "file_path") != want || r["tool_use_id"] == nil {
		t.Fatalf("can_use_tool request = %v", req)
	}
	if s, _ := r["permission_suggestions"].([]any); len(s) != 1 || get(s[0], "mode") != "acceptEdits" {
		t.Errorf("permission_suggestions = %v", r["permission_suggestions"])
	}
	// The tool_use was announced before the request, with the same id.
	var sawToolUse, sawDelta bool
	for _, m := range h.messages() {
		if m["type"] == "assistant" {
			if c, _ := get(m, "message", "content").([]any); len(c) == 1 && get(c[0], "type") == "tool_use" && get(c[0], "id") == r["tool_use_id"] {
				sawToolUse = true
			}
		}
		if m["type"] == "stream_event" && get(m, "event", "delta", "type") == "text_delta" {
			sawDelta = true
		}
	}
	if !sawToolUse || !sawDelta {
		t.Errorf("before can_use_tool: tool_use seen %v, text_delta seen %v", sawToolUse, sawDelta)
	}

	updated := map[string]any{"file_path": want, "content": "edited by the SDK\n"}
	h.answer(reqID, map[string]any{"behavior": "allow", "updatedInput": updated})

	tr := h.untilType("user")
	block := get(tr, "message", "content").([]any)[0]
	if get(block, "type") != "tool_result" || get(block, "tool_use_id") != r["tool_use_id"] || get(block, "is_error") != nil {
		t.Errorf("tool_result = %v", tr)
	}
	if get(tr, "tool_use_result", "type") != "create" || get(tr, "tool_use_result", "filePath") != want {
		t.Errorf("tool_use_result = %v", tr["tool_use_result"])
	}
	res := h.untilType("result")
	checkSuccessResult(t, res, sid, 2)
	if d, _ := res["permission_denials"].([]any); len(d) != 0 {
		t.Errorf("permission_denials = %v", d)
	}
	if !strings.Contains(res["result"].(string), want) {
		t.Errorf("final text %q does not name the file", res["result"])
	}
	got, err := os.ReadFile(want)
	if err != nil || string(got) != "edited by the SDK\n" {
		t.Errorf("hello.txt = %q, %v; want the updatedInput content", got, err)
	}
	if code := h.closeAndWait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	h.checkAllTyped()
	// The first reply echoed the prompt.
	var echoed bool
	for _, m := range h.messages() {
		echoed = echoed || (m["type"] == "assistant" && strings.Contains(blockText(m), "hello mock"))
	}
	if !echoed {
		t.Error("no assistant text echoed the prompt")
	}
}

func checkSuccessResult(t *testing.T, res map[string]any, sid string, turns float64) {
	t.Helper()
	if res["subtype"] != "success" || res["is_error"] != false || res["num_turns"] != turns || res["session_id"] != sid || res["terminal_reason"] != "completed" {
		t.Errorf("result = %v", res)
	}
	if c, _ := res["total_cost_usd"].(float64); c <= 0 {
		t.Errorf("total_cost_usd = %v", res["total_cost_usd"])
	}
	if d, _ := res["duration_ms"].(float64); d <= 0 {
		t.Errorf("duration_ms = %v", res["duration_ms"])
	}
	for _, k := range []string{"usage", "modelUsage", "permission_denials", "uuid", "result", "duration_api_ms"} {
		if _, ok := res[k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}
}

func TestDemoDenyLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	h := start(t, mockclaude.Config{Cwd: dir, Args: sdkArgs("--permission-prompt-tool", "stdio")})
	h.initialize(nil)
	h.user("please write")
	req := h.until(func(m map[string]any) bool {
		return m["type"] == "control_request" && get(m, "request", "subtype") == "can_use_tool"
	})
	h.answer(req["request_id"].(string), map[string]any{"behavior": "deny", "message": "denied by test driver"})
	tr := h.untilType("user")
	block := get(tr, "message", "content").([]any)[0]
	if get(block, "is_error") != true || get(block, "content") != "denied by test driver" || tr["tool_use_result"] != "Error: denied by test driver" {
		t.Errorf("tool_result = %v", tr)
	}
	res := h.untilType("result")
	if res["subtype"] != "success" || res["num_turns"] != 2.0 {
		t.Errorf("result = %v", res)
	}
	d, _ := res["permission_denials"].([]any)
	if len(d) != 1 || get(d[0], "tool_name") != "Write" || get(d[0], "tool_use_id") != get(req, "request", "tool_use_id") {
		t.Errorf("permission_denials = %v", res["permission_denials"])
	}
	if _, err := os.Stat(filepath.Join(dir, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("hello.txt exists after deny (stat err %v)", err)
	}
	if code := h.closeAndWait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	h.checkAllTyped()
	for _, m := range h.messages() {
		if m["type"] == "stream_event" {
			t.Fatalf("stream_event without --include-partial-messages: %v", m)
		}
	}
}

// Without --permission-prompt-tool stdio the permission mode decides.
func TestDemoPermissionModeDecides(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		written bool
	}{{"acceptEdits", true}, {"bypassPermissions", true}, {"default", false}, {"plan", false}} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			h := start(t, mockclaude.Config{Cwd: dir, Args: sdkArgs("--permission-mode", tc.mode)})
			h.initialize(nil)
			h.user("hi")
			res := h.untilType("result")
			if code := h.closeAndWait(); code != 0 {
				t.Errorf("exit code %d", code)
			}
			_, err := os.Stat(filepath.Join(dir, "hello.txt"))
			if written := err == nil; written != tc.written {
				t.Errorf("hello.txt written = %v, want %v", written, tc.written)
			}
			d, _ := res["permission_denials"].([]any)
			if (len(d) == 0) != tc.written {
				t.Errorf("permission_denials = %v", d)
			}
			for _, m := range h.messages() {
				if m["type"] == "control_request" {
					t.Errorf("unexpected control_request without the stdio prompt tool: %v", m)
				}
			}
		})
	}
}

func TestDemoRefusesPathOutsideCwd(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := start(t, mockclaude.Config{Cwd: dir, Args: sdkArgs("--permission-prompt-tool", "stdio")})
	h.initialize(nil)
	h.user("hi")
	req := h.until(isType("control_request", ""))
	h.answer(req["request_id"].(string), map[string]any{"behavior": "allow", "updatedInput": map[string]any{"file_path": "../evil.txt", "content": "x"}})
	tr := h.untilType("user")
	if get(get(tr, "message", "content").([]any)[0], "is_error") != true {
		t.Errorf("tool_result = %v", tr)
	}
	h.untilType("result")
	if _, err := os.Stat(filepath.Join(parent, "evil.txt")); !os.IsNotExist(err) {
		t.Errorf("file outside Cwd was written (stat err %v)", err)
	}
	h.closeAndWait()
}

// Closing stdin while can_use_tool is pending fails it like the real CLI
// ("Stream closed"); the turn still finishes and the process exits 0.
func TestDemoStdinClosedDuringPermission(t *testing.T) {
	dir := t.TempDir()
	h := start(t, mockclaude.Config{Cwd: dir, Args: sdkArgs("--permission-prompt-tool", "stdio")})
	h.initialize(nil)
	h.user("hi")
	h.until(isType("control_request", ""))
	h.stdin.Close()
	tr := h.untilType("user")
	if !strings.Contains(get(get(tr, "message", "content").([]any)[0], "content").(string), "Stream closed") {
		t.Errorf("tool_result = %v", tr)
	}
	h.untilType("result")
	if code := h.wait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// An interrupt while can_use_tool is pending withdraws the request and ends
// the turn as interrupted during a tool.
func TestDemoInterruptDuringPermission(t *testing.T) {
	h := start(t, mockclaude.Config{Cwd: t.TempDir(), Args: sdkArgs("--permission-prompt-tool", "stdio")})
	h.initialize(nil)
	h.user("hi")
	req := h.until(isType("control_request", ""))
	if resp := h.control("req_2", map[string]any{"subtype": "interrupt"}); resp["subtype"] != "success" {
		t.Fatalf("interrupt response = %v", resp)
	}
	cancel := h.untilType("control_cancel_request")
	if cancel["request_id"] != req["request_id"] {
		t.Errorf("control_cancel_request = %v, want request %v", cancel, req["request_id"])
	}
	if u := h.untilType("user"); blockText(u) != "[Request interrupted by user for tool use]" {
		t.Errorf("user = %v", u)
	}
	res := h.untilType("result")
	if res["subtype"] != "error_during_execution" || res["terminal_reason"] != "aborted_tools" {
		t.Errorf("result = %v", res)
	}
	// A late answer to the withdrawn request is ignored.
	h.answer(req["request_id"].(string), map[string]any{"behavior": "allow"})
	if code := h.closeAndWait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
