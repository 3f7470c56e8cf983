package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

func TestTurnOverMemoryTransport(t *testing.T) {
	mem, a := newPair(t)
	c := connect(t, mem, a, claude.Options{})
	if got := c.ServerInfo().Models; len(got) != 1 || got[0].Value != "m1" {
		t.Fatalf("server info models = %+v", got)
	}
	ctx := context.Background()
	sent := make(chan error, 1)
	go func() { sent <- c.Query(ctx, "say hi") }()
	user := a.next()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if user["type"] != "user" || user["message"].(map[string]any)["content"] != "say hi" {
		t.Fatalf("user line = %v", user)
	}
	go func() { a.send(initLine); a.send(assistantLine); a.send(resultLine) }()
	var types []string
	for msg, err := range c.Receive(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, msg.Type())
	}
	if strings.Join(types, ",") != "system,assistant,result" {
		t.Fatalf("types = %v", types)
	}
	tot := c.Totals()
	if c.SessionID() != "s-1" || tot.Turns != 1 || tot.CostUSD != 0.5 || tot.Usage.OutputTokens != 3 {
		t.Fatalf("session %q totals %+v", c.SessionID(), tot)
	}
}

func TestCostIsCumulativeUsageIsSummed(t *testing.T) {
	mem, a := newPair(t)
	c := connect(t, mem, a, claude.Options{})
	go func() {
		a.send(`{"type":"result","subtype":"success","num_turns":1,"total_cost_usd":0.1,"usage":{"output_tokens":7}}`)
		a.send(`{"type":"result","subtype":"success","num_turns":2,"total_cost_usd":0.3,"usage":{"output_tokens":5}}`)
	}()
	for range 2 {
		for _, err := range c.Receive(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	tot := c.Totals()
	if tot.CostUSD != 0.3 || tot.Usage.OutputTokens != 12 || tot.Turns != 3 || tot.Results != 2 {
		t.Fatalf("totals = %+v", tot)
	}
}

func TestInitializeTimeout(t *testing.T) {
	mem, a := newPair(t)
	go func() { a.next() }() // read initialize, never answer
	_, err := claude.Connect(context.Background(), claude.Options{Transport: mem, InitializeTimeout: 50 * time.Millisecond})
	if !errors.Is(err, claude.ErrInitializeTimeout) || !errors.Is(err, claude.ErrControlTimeout) {
		t.Fatalf("err = %v", err)
	}
}

func TestInitializeCarriesHooksAgentsAndSDKServers(t *testing.T) {
	mem, a := newPair(t)
	opts := claude.Options{
		Transport: mem,
		Hooks: map[string][]claude.HookMatcher{
			cc.HookPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{noopHook, noopHook}, Timeout: 5 * time.Second}},
		},
		Agents:        map[string]claude.AgentDefinition{"reviewer": {Description: "d", Prompt: "p"}},
		SDKMCPServers: map[string]*mcpServer{"calc": newCalcServer()},
	}
	done := make(chan error, 1)
	go func() {
		c, err := claude.Connect(context.Background(), opts)
		if err == nil {
			defer c.Close()
		}
		done <- err
	}()
	req := a.answerInitialize()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(req)
	for _, want := range []string{`"hookCallbackIds":["hook_0","hook_1"]`, `"matcher":"Bash"`, `"timeout":5`, `"reviewer":{"description":"d","prompt":"p"}`, `"sdkMcpServers":["calc"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("initialize %s lacks %s", b, want)
		}
	}
}

func noopHook(context.Context, claude.HookInput) (claude.HookOutput, error) {
	return claude.HookOutput{}, nil
}

func TestControlRequestsAndErrors(t *testing.T) {
	mem, a := newPair(t)
	c := connect(t, mem, a, claude.Options{ControlTimeout: 100 * time.Millisecond})
	ctx := context.Background()

	errc := make(chan error, 1)
	go func() { errc <- c.SetModel(ctx, "claude-x") }()
	req := a.next()
	if r := req["request"].(map[string]any); r["subtype"] != "set_model" || r["model"] != "claude-x" {
		t.Fatalf("set_model line = %v", req)
	}
	a.success(req["request_id"].(string), nil)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	go func() { errc <- c.SetPermissionMode(ctx, "bogus") }()
	req = a.next()
	a.sendJSON(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "error", "request_id": req["request_id"], "error": "invalid mode"}})
	var ce *claude.ControlError
	if err := <-errc; !errors.As(err, &ce) || ce.Subtype != "set_permission_mode" || ce.Message != "invalid mode" {
		t.Fatalf("err = %v", err)
	}

	go func() { _, err := c.MCPStatus(ctx); errc <- err }()
	a.next() // never answered
	if err := <-errc; !errors.Is(err, claude.ErrControlTimeout) {
		t.Fatalf("err = %v", err)
	}
}

func TestPendingControlFailsAtOnceWhenAgentGoes(t *testing.T) {
	mem, a := newPair(t)
	c := connect(t, mem, a, claude.Options{ControlTimeout: time.Minute})
	errc := make(chan error, 1)
	go func() { errc <- c.Interrupt(context.Background()) }()
	a.next()
	_ = a.conn.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, claude.ErrProcessExited) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pending request did not fail when the agent went away")
	}
}

func TestCanUseToolAllowDenyAndPanic(t *testing.T) {
	mem, a := newPair(t)
	var calls atomic.Int32
	c := connect(t, mem, a, claude.Options{CanUseTool: func(_ context.Context, r claude.PermissionRequest) (claude.PermissionResult, error) {
		calls.Add(1)
		switch r.ToolName {
		case "Write":
			return claude.Allow{}, nil
		case "Bash":
			return claude.Deny{Message: "no shell", Interrupt: true}, nil
		}
		panic("boom")
	}})
	_ = c
	a.send(`{"type":"control_request","request_id":"p1","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"a.txt"},"tool_use_id":"t1"}}`)
	got := a.next()["response"].(map[string]any)
	resp := got["response"].(map[string]any)
	if got["request_id"] != "p1" || resp["behavior"] != "allow" || resp["updatedInput"].(map[string]any)["file_path"] != "a.txt" {
		t.Fatalf("allow answer = %v", got)
	}
	a.send(`{"type":"control_request","request_id":"p2","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{}}}`)
	resp = a.next()["response"].(map[string]any)["response"].(map[string]any)
	if resp["behavior"] != "deny" || resp["message"] != "no shell" || resp["interrupt"] != true {
		t.Fatalf("deny answer = %v", resp)
	}
	a.send(`{"type":"control_request","request_id":"p3","request":{"subtype":"can_use_tool","tool_name":"Other","input":{}}}`)
	got = a.next()["response"].(map[string]any)
	if got["subtype"] != "error" || !strings.Contains(got["error"].(string), "panicked") {
		t.Fatalf("panic answer = %v", got)
	}
	if calls.Load() != 3 {
		t.Fatalf("calls = %d", calls.Load())
	}
}

func TestControlCancelRequestCancelsCallback(t *testing.T) {
	mem, a := newPair(t)
	cancelled := make(chan struct{})
	connect(t, mem, a, claude.Options{CanUseTool: func(ctx context.Context, _ claude.PermissionRequest) (claude.PermissionResult, error) {
		<-ctx.Done()
		close(cancelled)
		return claude.Deny{}, ctx.Err()
	}})
	a.send(`{"type":"control_request","request_id":"p1","request":{"subtype":"can_use_tool","tool_name":"Write","input":{}}}`)
	a.send(`{"type":"control_cancel_request","request_id":"p1"}`)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("callback context was not cancelled")
	}
	// No answer goes out for a cancelled request: the next line the agent
	// reads is the answer to a later request.
	a.send(`{"type":"control_request","request_id":"x","request":{"subtype":"no_such"}}`)
	if got := a.next()["response"].(map[string]any); got["request_id"] != "x" || got["subtype"] != "error" {
		t.Fatalf("next answer = %v", got)
	}
}

func TestHookCallbacksRouteByID(t *testing.T) {
	mem, a := newPair(t)
	deny := func(_ context.Context, in claude.HookInput) (claude.HookOutput, error) {
		if in.ToolName != "Bash" || in.HookEventName != "PreToolUse" {
			return claude.HookOutput{}, errors.New("unexpected input")
		}
		return claude.DenyTool("not today"), nil
	}
	rewrite := func(context.Context, claude.HookInput) (claude.HookOutput, error) {
		return claude.RewriteToolInput([]byte(`{"command":"echo safe"}`), "rewritten"), nil
	}
	connect(t, mem, a, claude.Options{Hooks: map[string][]claude.HookMatcher{
		cc.HookPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{deny, rewrite}}},
	}})
	a.send(`{"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback","callback_id":"hook_0","input":{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}}}`)
	out := a.next()["response"].(map[string]any)["response"].(map[string]any)["hookSpecificOutput"].(map[string]any)
	if out["permissionDecision"] != "deny" || out["permissionDecisionReason"] != "not today" || out["hookEventName"] != "PreToolUse" {
		t.Fatalf("deny hook answer = %v", out)
	}
	a.send(`{"type":"control_request","request_id":"h2","request":{"subtype":"hook_callback","callback_id":"hook_1","input":{"hook_event_name":"PreToolUse"}}}`)
	out = a.next()["response"].(map[string]any)["response"].(map[string]any)["hookSpecificOutput"].(map[string]any)
	if out["updatedInput"].(map[string]any)["command"] != "echo safe" {
		t.Fatalf("rewrite hook answer = %v", out)
	}
	a.send(`{"type":"control_request","request_id":"h3","request":{"subtype":"hook_callback","callback_id":"hook_9","input":{}}}`)
	if got := a.next()["response"].(map[string]any); got["subtype"] != "error" {
		t.Fatalf("unknown callback answer = %v", got)
	}
}

func TestJunkLinesAreReportedAndSkipped(t *testing.T) {
	mem, a := newPair(t)
	var skipped atomic.Int32
	c := connect(t, mem, a, claude.Options{OnLineError: func(err error) {
		if cc.IsParseError(err) {
			skipped.Add(1)
		}
	}})
	go func() {
		for _, l := range []string{"not json", "null", "42", `[1]`, `"s"`, initLine, `{"type":"bogus_future","x":1}`, resultLine} {
			a.send(l)
		}
	}()
	var types []string
	for msg, err := range c.Receive(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, msg.Type())
	}
	if strings.Join(types, ",") != "system,bogus_future,result" || skipped.Load() != 5 {
		t.Fatalf("types = %v skipped = %d", types, skipped.Load())
	}
}

func TestBackpressureAndControlWhileQueueFull(t *testing.T) {
	mem, a := newPair(t)
	c := connect(t, mem, a, claude.Options{ControlTimeout: 5 * time.Second})
	// The agent floods without anyone receiving: its writes must stall.
	var written atomic.Int32
	stalled := make(chan struct{})
	go func() {
		defer close(stalled)
		for i := 0; i < 5000; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			err := a.conn.Write(ctx, []byte(assistantLine))
			cancel()
			if err != nil {
				return
			}
			written.Add(1)
		}
	}()
	<-stalled
	if n := written.Load(); n >= 5000 || n < 100 {
		t.Fatalf("agent wrote %d lines with nobody reading; want a stall after the queue bound", n)
	}
	// A control call still gets its answer while the queue is full.
	errc := make(chan error, 1)
	go func() { errc <- c.Interrupt(context.Background()) }()
	req := a.next()
	a.success(req["request_id"].(string), nil)
	if err := <-errc; err != nil {
		t.Fatalf("interrupt while queue full: %v", err)
	}
}

func TestOutputEndingWithoutResult(t *testing.T) {
	mem, a := newPair(t)
	c := connect(t, mem, a, claude.Options{})
	go func() { a.send(initLine); _ = a.conn.CloseWrite() }()
	var last error
	for _, err := range c.Receive(context.Background()) {
		last = err
	}
	if !errors.Is(last, claude.ErrNoResult) {
		t.Fatalf("last err = %v", last)
	}
}

func TestConcurrentReceiveIsRefused(t *testing.T) {
	mem, a := newPair(t)
	c := connect(t, mem, a, claude.Options{})
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range c.Receive(context.Background()) {
			close(started)
			return
		}
	}()
	a.send(initLine)
	<-started
	<-done
	go func() { a.send(resultLine) }()
	n := 0
	for _, err := range c.Receive(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("second receive got %d messages", n)
	}
}

// A control line that starts like an assistant message (a second "type"
// key decides) passes the reader; the consumer answers it all the same and
// never yields it, nor a keep-alive spelled that way.
func TestDisguisedControlLinesAreHandled(t *testing.T) {
	mem, a := newPair(t)
	c := connect(t, mem, a, claude.Options{CanUseTool: func(context.Context, claude.PermissionRequest) (claude.PermissionResult, error) {
		return claude.Allow{}, nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got := make(chan []string, 1)
	go func() {
		var types []string
		for msg, err := range c.Receive(ctx) {
			if err != nil {
				types = append(types, "error: "+err.Error())
				break
			}
			types = append(types, msg.Type())
		}
		got <- types
	}()
	a.send(`{"type":"assistant","message":{},"type":"keep_alive"}`)
	a.send(`{"type":"assistant","request_id":"p1","type":"control_request","request":{"subtype":"can_use_tool","tool_name":"Write","input":{}}}`)
	answer := a.next()["response"].(map[string]any)
	if answer["request_id"] != "p1" || answer["response"].(map[string]any)["behavior"] != "allow" {
		t.Fatalf("answer = %v", answer)
	}
	a.send(`{"type":"result","subtype":"success","is_error":false,"session_id":"s"}`)
	if types := <-got; len(types) != 1 || types[0] != "result" {
		t.Fatalf("consumer saw %v, want only the result", types)
	}
}
