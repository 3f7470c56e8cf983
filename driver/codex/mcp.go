package codex

import "github.com/tetherhq/tether/agent"

// mcpTransports are the MCP servers' transports Codex's mcp_servers
// configuration takes: a command, or a streamable HTTP url (it has no
// SSE transport).
func mcpTransports() []agent.MCPTransport {
	return []agent.MCPTransport{agent.MCPStdio, agent.MCPHTTP}
}

// mcpConfig is the thread's configuration of the session's MCP servers,
// as config.toml's [mcp_servers.<name>] tables under dotted keys: they go
// with the servers of the home's config.toml, and over the stdio of the
// app-server rather than its argv, which every local user can read.
func mcpConfig(servers []agent.MCPServer) map[string]any {
	out := make(map[string]any, len(servers))
	for _, s := range servers {
		table := map[string]any{}
		if s.Transport == agent.MCPStdio {
			table["command"] = s.Command
			table["args"] = append([]string{}, s.Args...)
			if len(s.Env) > 0 {
				table["env"] = s.Env
			}
		} else {
			table["url"] = s.URL
			if len(s.Headers) > 0 {
				table["http_headers"] = s.Headers
			}
		}
		out["mcp_servers."+s.Name] = table
	}
	return out
}
