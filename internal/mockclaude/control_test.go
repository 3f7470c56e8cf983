package mockclaude_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/mockclaude"
)

func TestInterruptDuringSlow(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "slow", Delay: 20 * time.Millisecond, Args: sdkArgs("--include-partial-messages")})
	h.initialize(nil)
	h.user("be slow")
	sid := h.until(isType("system", "init"))["session_id"]
	for range 2 {
		h.until(func(m map[string]any) bool { return get(m, "event", "delta", "type") == "text_delta" })
	}
	resp := h.control("req_2_int", map[string]any{"subtype": "interrupt"})
	if resp["subtype"] != "success" {
		t.Fatalf("interrupt response = %v", resp)
	}
	partial := h.untilType("assistant")
	if txt := blockText(partial); !strings.HasPrefix(txt, "tick 1 tick 2 ") || strings.Contains(txt, "tick 50") {
		t.Errorf("partial assistant text = %q", txt)
	}
	u := h.next()
	if u["type"] != "user" || blockText(u) != "[Request interrupted by user]" {
		t.Errorf("after the partial assistant: %v", u)
	}
	res := h.next()
	if res["type"] != "result" || res["subtype"] != "error_during_execution" || res["is_error"] != true ||
		res["terminal_reason"] != "aborted_streaming" || res["session_id"] != sid {
		t.Errorf("interrupt result = %v", res)
	}
	if _, ok := res["result"]; ok {
		t.Errorf("error result carries a result text: %v", res)
	}

	// The same process takes the next message normally.
	h.user("again")
	if sys := h.until(isType("system", "init")); sys["session_id"] != sid {
		t.Errorf("session id changed: %v then %v", sid, sys["session_id"])
	}
	res = h.untilType("result")
	if res["subtype"] != "success" || !strings.Contains(res["result"].(string), "tick 50") {
		t.Errorf("second result = %v", res)
	}
	if code := h.closeAndWait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	h.checkAllTyped()
}

func TestSetModelReflectedInNextInit(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "text", Args: sdkArgs("--model", "claude-first")})
	h.initialize(nil)
	h.user("one")
	if m := h.until(isType("system", "init"))["model"]; m != "claude-first" {
		t.Errorf("init model = %v", m)
	}
	h.untilType("result")
	resp := h.control("req_2", map[string]any{"subtype": "set_model", "model": "claude-second"})
	if resp["subtype"] != "success" || resp["response"] != nil {
		t.Errorf("set_model response = %v", resp)
	}
	h.user("two")
	if m := h.until(isType("system", "init"))["model"]; m != "claude-second" {
		t.Errorf("init model after set_model = %v", m)
	}
	if m := get(h.untilType("assistant"), "message", "model"); m != "claude-second" {
		t.Errorf("assistant model = %v", m)
	}
	res := h.untilType("result")
	if _, ok := get(res, "modelUsage", "claude-second").(map[string]any); !ok {
		t.Errorf("modelUsage = %v", res["modelUsage"])
	}
	h.control("req_3", map[string]any{"subtype": "set_model"})
	h.user("three")
	if m := h.until(isType("system", "init"))["model"]; m != mockclaude.DefaultModel {
		t.Errorf("init model after set_model(default) = %v", m)
	}
	h.closeAndWait()
}

func TestSetPermissionModeEmitsStatus(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "text", Args: sdkArgs()})
	h.initialize(nil)
	resp := h.control("req_2", map[string]any{"subtype": "set_permission_mode", "mode": "acceptEdits"})
	if resp["subtype"] != "success" || get(resp, "response", "mode") != "acceptEdits" {
		t.Errorf("set_permission_mode response = %v", resp)
	}
	st := h.until(isType("system", "status"))
	if st["permissionMode"] != "acceptEdits" || st["status"] != nil || st["session_id"] == nil {
		t.Errorf("system/status = %v", st)
	}
	resp = h.control("req_3", map[string]any{"subtype": "set_permission_mode", "mode": "yolo"})
	if resp["subtype"] != "error" {
		t.Errorf("invalid mode accepted: %v", resp)
	}
	h.user("hi")
	if m := h.until(isType("system", "init"))["permissionMode"]; m != "acceptEdits" {
		t.Errorf("init permissionMode = %v", m)
	}
	h.closeAndWait()
}

func TestOtherControlRequests(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "text", Args: sdkArgs()})
	h.initialize(nil)

	resp := h.control("req_2", map[string]any{"subtype": "no_such_subtype"})
	if resp["subtype"] != "error" || resp["error"] != "Unsupported control request subtype: no_such_subtype" {
		t.Errorf("unknown subtype response = %v", resp)
	}
	resp = h.control("req_3", map[string]any{"subtype": "mcp_status"})
	if s, ok := get(resp, "response", "mcpServers").([]any); !ok || len(s) != 0 {
		t.Errorf("mcp_status response = %v", resp)
	}
	resp = h.control("req_4", map[string]any{"subtype": "get_context_usage"})
	if get(resp, "response", "maxTokens") != 200000.0 || get(resp, "response", "categories") == nil || get(resp, "response", "totalTokens") == nil {
		t.Errorf("get_context_usage response = %v", resp)
	}
	resp = h.control("req_5", map[string]any{"subtype": "rewind_files", "user_message_id": "u1", "dry_run": true})
	if resp["subtype"] != "success" || get(resp, "response", "canRewind") != true {
		t.Errorf("rewind_files response = %v", resp)
	}
	// A repeated initialize returns the same payload.
	again := h.initialize(nil)
	if again["subtype"] != "success" || get(again, "response", "pid") == nil {
		t.Errorf("second initialize = %v", again)
	}
	// Blank lines, bad JSON and control_cancel_request are tolerated.
	h.sendRaw("")
	h.sendRaw("{not json")
	h.sendRaw(`{"type":"control_cancel_request","request_id":"nope"}`)
	h.user("still here")
	if res := h.untilType("result"); res["subtype"] != "success" {
		t.Errorf("result = %v", res)
	}
	if code := h.closeAndWait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if !strings.Contains(h.stderr.String(), "not a JSON object") {
		t.Errorf("stderr does not mention the bad line: %q", h.stderr.String())
	}
	h.checkAllTyped()
}

func TestSessionIDs(t *testing.T) {
	sessionOf := func(args ...string) string {
		in := strings.NewReader(`{"type":"user","message":{"role":"user","content":"hi"}}` + "\n")
		var out bytes.Buffer
		cfg := mockclaude.Config{Scenario: "text", Args: sdkArgs(args...), Cwd: "/", Now: newClock().Now}
		if code := mockclaude.Run(context.Background(), in, &out, nil, cfg); code != 0 {
			t.Fatalf("exit code %d", code)
		}
		m, ok := object(bytes.SplitN(out.Bytes(), []byte("\n"), 2)[0])
		if !ok || m["subtype"] != "init" {
			t.Fatalf("first line = %s", out.String())
		}
		return m["session_id"].(string)
	}
	if got := sessionOf("--resume=abc-123"); got != "abc-123" {
		t.Errorf("--resume=abc-123 gave session %q", got)
	}
	if got := sessionOf("--session-id=11111111-2222-4333-8444-555555555555"); got != "11111111-2222-4333-8444-555555555555" {
		t.Errorf("--session-id gave session %q", got)
	}
	a, b := sessionOf(), sessionOf()
	if a != b || len(a) != 36 {
		t.Errorf("generated session ids %q and %q: want equal UUIDs for equal seeds", a, b)
	}
}

func TestNoInitStillAnswersOtherRequests(t *testing.T) {
	h := start(t, mockclaude.Config{Scenario: "no-init", Args: sdkArgs()})
	h.send(map[string]any{"type": "control_request", "request_id": "req_1", "request": map[string]any{"subtype": "initialize"}})
	resp := h.control("req_2", map[string]any{"subtype": "mcp_status"})
	if resp["subtype"] != "success" {
		t.Errorf("mcp_status = %v", resp)
	}
	for _, m := range h.messages() {
		if get(m, "response", "request_id") == "req_1" {
			t.Errorf("initialize was answered: %v", m)
		}
	}
	h.user("hi")
	h.untilType("result")
	h.closeAndWait()
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		mockclaude.EnvScenario: "huge-line", mockclaude.EnvDelayMS: "15", mockclaude.EnvN: "3",
		mockclaude.EnvSize: "2M", mockclaude.EnvToolArgs: `{"a":1}`,
	}
	cfg := mockclaude.ConfigFromEnv([]string{"--verbose"}, func(k string) string { return env[k] })
	if cfg.Scenario != "huge-line" || cfg.Delay != 15*time.Millisecond || cfg.N != 3 || cfg.Size != 2<<20 ||
		cfg.ToolArgs != `{"a":1}` || len(cfg.Args) != 1 || len(cfg.Problems) != 0 {
		t.Errorf("ConfigFromEnv = %+v", cfg)
	}
	env[mockclaude.EnvSize] = "lots"
	cfg = mockclaude.ConfigFromEnv(nil, func(k string) string { return env[k] })
	if len(cfg.Problems) != 1 {
		t.Fatalf("Problems = %v", cfg.Problems)
	}
	var stderr bytes.Buffer
	if code := mockclaude.Run(context.Background(), strings.NewReader(""), &bytes.Buffer{}, &stderr, cfg); code != 2 || !strings.Contains(stderr.String(), mockclaude.EnvSize) {
		t.Errorf("bad env: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if code := mockclaude.Run(context.Background(), strings.NewReader(""), &bytes.Buffer{}, &stderr, mockclaude.Config{Scenario: "nope"}); code != 2 || !strings.Contains(stderr.String(), "unknown scenario") {
		t.Errorf("unknown scenario: exit %d, stderr %q", code, stderr.String())
	}
	var out bytes.Buffer
	if code := mockclaude.Run(context.Background(), strings.NewReader(""), &out, nil, mockclaude.Config{Args: []string{"-v"}}); code != 0 || !strings.HasPrefix(out.String(), mockclaude.CLIVersion) {
		t.Errorf("-v: exit %d, output %q", code, out.String())
	}
}

// Print mode: a positional prompt without stream-json input runs one turn.
func TestPrintMode(t *testing.T) {
	var out bytes.Buffer
	cfg := mockclaude.Config{Scenario: "demo", Cwd: t.TempDir(), Now: newClock().Now,
		Args: []string{"-p", "--max-turns", "3", "say hi", "--output-format", "stream-json", "--verbose"}}
	if code := mockclaude.Run(context.Background(), strings.NewReader(""), &out, nil, cfg); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	last, _ := object(lines[len(lines)-1])
	if last["type"] != "result" || !strings.Contains(out.String(), `You said: \"say hi\"`) {
		t.Errorf("print mode output:\n%s", out.String())
	}
}
