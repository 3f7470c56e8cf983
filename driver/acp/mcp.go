package acp

import (
	"maps"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
)

// mcpServers are the session's MCP servers as session/new, session/load
// and session/resume take them (never nil: the field is required).
func mcpServers(servers []agent.MCPServer) []acpsdk.McpServer {
	out := make([]acpsdk.McpServer, 0, len(servers))
	for _, s := range servers {
		switch s.Transport {
		case agent.MCPStdio:
			env := make([]acpsdk.EnvVariable, 0, len(s.Env))
			for _, k := range slices.Sorted(maps.Keys(s.Env)) {
				env = append(env, acpsdk.EnvVariable{Name: k, Value: s.Env[k]})
			}
			args := append([]string{}, s.Args...)
			out = append(out, acpsdk.McpServer{Stdio: &acpsdk.McpServerStdio{Name: s.Name, Command: s.Command, Args: args, Env: env}})
		case agent.MCPHTTP:
			out = append(out, acpsdk.McpServer{Http: &acpsdk.McpServerHttpInline{Type: "http", Name: s.Name, Url: s.URL, Headers: headers(s.Headers)}})
		case agent.MCPSSE:
			out = append(out, acpsdk.McpServer{Sse: &acpsdk.McpServerSseInline{Type: "sse", Name: s.Name, Url: s.URL, Headers: headers(s.Headers)}})
		}
	}
	return out
}

func headers(h map[string]string) []acpsdk.HttpHeader {
	out := make([]acpsdk.HttpHeader, 0, len(h))
	for _, k := range slices.Sorted(maps.Keys(h)) {
		out = append(out, acpsdk.HttpHeader{Name: k, Value: h[k]})
	}
	return out
}
