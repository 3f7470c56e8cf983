package mockclaude

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// mcpTurn talks to every SDK MCP server (initialize sdkMcpServers plus
// --mcp-config entries of type sdk) through mcp_message control requests:
// JSON-RPC initialize, notifications/initialized, tools/list, then
// tools/call of the first tool with TETHER_MOCK_TOOL_ARGS (default {}).
// The final assistant text reports "mcp__<server>__<tool> returned: <text>"
// per server.
func mcpTurn(t *turn) error {
	servers := t.s.sdkServers()
	args := json.RawMessage(`{}`)
	if a := strings.TrimSpace(t.s.cfg.ToolArgs); a != "" {
		if !json.Valid([]byte(a)) {
			t.s.notes.notef("%s is not valid JSON; using {}", EnvToolArgs)
		} else {
			args = json.RawMessage(a)
		}
	}
	var reports []string
	for _, name := range servers {
		report, err := t.mcpServer(name, args)
		if err != nil {
			return err
		}
		reports = append(reports, report)
	}
	final := "No SDK MCP servers were configured."
	if len(reports) > 0 {
		final = strings.Join(reports, "\n")
	}
	text, err := t.reply([]string{final})
	if err != nil {
		return err
	}
	return t.success(text)
}

// mcpServer runs the handshake and one tool call against one server and
// returns a line for the report. Only interrupts and write errors are
// returned as errors; protocol failures become part of the report.
func (t *turn) mcpServer(server string, args json.RawMessage) (string, error) {
	init := map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{"roots": map[string]any{}},
		"clientInfo":      map[string]string{"name": "claude-code", "version": CLIVersion},
	}
	if _, err := t.mcpCall(server, 0, "initialize", init); err != nil {
		return mcpFailure(server, "initialize", err)
	}
	if _, err := t.mcpCall(server, -1, "notifications/initialized", nil); err != nil {
		return mcpFailure(server, "notifications/initialized", err)
	}
	listed, err := t.mcpCall(server, 1, "tools/list", map[string]any{})
	if err != nil {
		return mcpFailure(server, "tools/list", err)
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(listed, &list); err != nil || len(list.Tools) == 0 {
		return fmt.Sprintf("server %s lists no tools", server), nil
	}
	tool := list.Tools[0].Name
	full := "mcp__" + server + "__" + tool

	c, err := t.newCall()
	if err != nil {
		return "", err
	}
	toolID := t.s.ids.token("toolu_mock_")
	if err := c.toolUse(toolID, full, args); err != nil {
		return "", err
	}
	if err := c.end("tool_use"); err != nil {
		return "", err
	}
	called, callErr := t.mcpCall(server, 2, "tools/call", map[string]any{"name": tool, "arguments": args})
	text, isError := toolCallText(called, callErr)
	if callErr != nil && !isMCPFailure(callErr) {
		return "", callErr
	}
	content := []any{textBlock{Type: "text", Text: text}}
	if err := t.toolResult(toolID, content, ptr(isError), content); err != nil {
		return "", err
	}
	if isError {
		return fmt.Sprintf("%s failed: %s", full, text), nil
	}
	return fmt.Sprintf("%s returned: %s", full, text), nil
}

// mcpError is a JSON-RPC error answer from the SDK's server.
type mcpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *mcpError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// mcpCall sends one JSON-RPC message (a notification when id < 0) and
// returns the JSON-RPC result.
func (t *turn) mcpCall(server string, id int, method string, params any) (json.RawMessage, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if id >= 0 {
		msg["id"] = id
	}
	if params != nil {
		msg["params"] = params
	}
	body, err := t.request(map[string]any{"subtype": "mcp_message", "server_name": server, "message": msg})
	if err != nil {
		return nil, err
	}
	var resp struct {
		MCPResponse struct {
			Result json.RawMessage `json:"result"`
			Error  *mcpError       `json:"error"`
		} `json:"mcp_response"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, &mcpError{Code: -32700, Message: "unreadable mcp_message response: " + err.Error()}
	}
	if resp.MCPResponse.Error != nil {
		return nil, resp.MCPResponse.Error
	}
	return resp.MCPResponse.Result, nil
}

// isMCPFailure reports errors that belong in the report rather than ending
// the turn.
func isMCPFailure(err error) bool {
	var me *mcpError
	var se *sdkError
	return errors.As(err, &me) || errors.As(err, &se) || errors.Is(err, errStreamClosed)
}

func mcpFailure(server, step string, err error) (string, error) {
	if !isMCPFailure(err) {
		return "", err
	}
	return fmt.Sprintf("server %s failed at %s: %v", server, step, err), nil
}

// toolCallText joins the text content of a tools/call result.
func toolCallText(result json.RawMessage, err error) (string, bool) {
	if err != nil {
		return err.Error(), true
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if json.Unmarshal(result, &r) != nil {
		return compactJSON(result), false
	}
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n"), r.IsError
}
