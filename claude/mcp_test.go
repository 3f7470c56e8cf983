package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
)

type mcpServer = mcp.Server

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func newCalcServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers"}, func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	return s
}

func TestInProcessMCPServerAnswersTheCLI(t *testing.T) {
	mem, a := newPair(t)
	connect(t, mem, a, claude.Options{SDKMCPServers: map[string]*mcp.Server{"calc": newCalcServer()}})
	call := func(id, msg string) map[string]any {
		t.Helper()
		a.send(fmt.Sprintf(`{"type":"control_request","request_id":%q,"request":{"subtype":"mcp_message","server_name":"calc","message":%s}}`, id, msg))
		got := a.next()["response"].(map[string]any)
		if got["subtype"] != "success" {
			t.Fatalf("%s: %v", id, got)
		}
		return got["response"].(map[string]any)["mcp_response"].(map[string]any)
	}
	init := call("m1", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"2"}}}`)
	if init["result"].(map[string]any)["serverInfo"].(map[string]any)["name"] != "calc" {
		t.Fatalf("initialize = %v", init)
	}
	ack := call("m2", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, ok := ack["result"]; !ok {
		t.Fatalf("notification ack = %v", ack)
	}
	list := call("m3", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	tools := list["result"].(map[string]any)["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != "add" {
		t.Fatalf("tools = %v", list)
	}
	res := call("m4", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`)
	b, _ := json.Marshal(res)
	content := res["result"].(map[string]any)["content"].([]any)
	if content[0].(map[string]any)["text"] != "5" {
		t.Fatalf("tools/call = %s", b)
	}
	missing := call("m5", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	_ = missing
	a.send(`{"type":"control_request","request_id":"m6","request":{"subtype":"mcp_message","server_name":"nope","message":{"jsonrpc":"2.0","id":4,"method":"tools/list"}}}`)
	got := a.next()["response"].(map[string]any)["response"].(map[string]any)["mcp_response"].(map[string]any)
	if got["error"].(map[string]any)["code"].(float64) != -32601 {
		t.Fatalf("unknown server = %v", got)
	}
}
