package opencode

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/tetherhq/tether/agent"
)

// mcpTransports are the MCP servers' transports OpenCode's mcp
// configuration takes: a local command, or a remote URL, which it speaks
// streamable HTTP to and falls back to SSE on.
func mcpTransports() []agent.MCPTransport {
	return []agent.MCPTransport{agent.MCPStdio, agent.MCPHTTP, agent.MCPSSE}
}

// mcpConfig is the mcp object of OpenCode's config: the one of current
// (the configured OPENCODE_CONFIG_CONTENT, which may be empty) with the
// session's servers over it.
func mcpConfig(current string, servers []agent.MCPServer) (map[string]any, error) {
	out := map[string]any{}
	if current != "" {
		var doc struct {
			MCP map[string]any `json:"mcp"`
		}
		if err := json.Unmarshal([]byte(current), &doc); err != nil {
			return nil, fmt.Errorf("%w: OPENCODE_CONFIG_CONTENT in Env: its mcp is not an object: %w", ErrInvalidRequest, err)
		}
		maps.Copy(out, doc.MCP)
	}
	for _, s := range servers {
		if s.Transport == agent.MCPStdio {
			entry := map[string]any{"type": "local", "command": append([]string{s.Command}, s.Args...), "enabled": true}
			if len(s.Env) > 0 {
				entry["environment"] = s.Env
			}
			out[s.Name] = entry
			continue
		}
		entry := map[string]any{"type": "remote", "url": s.URL, "enabled": true}
		if len(s.Headers) > 0 {
			entry["headers"] = s.Headers
		}
		out[s.Name] = entry
	}
	return out, nil
}
