package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/runner/sessions"
)

// mcpCapabilities are the transports beyond stdio the agent takes, as
// initialize declares them.
func mcpCapabilities(caps agent.Capabilities) acpsdk.McpCapabilities {
	return acpsdk.McpCapabilities{Http: slices.Contains(caps.MCP, agent.MCPHTTP), Sse: slices.Contains(caps.MCP, agent.MCPSSE)}
}

// mcpServers maps the editor's MCP servers onto the agent interface's and
// checks them against what the agent takes; a server it cannot take is an
// invalid-params error that names it and says why.
func (f *front) mcpServers(servers []acpsdk.McpServer) ([]agent.MCPServer, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	out := make([]agent.MCPServer, 0, len(servers))
	for _, s := range servers {
		switch {
		case s.Stdio != nil:
			m := agent.MCPServer{Name: s.Stdio.Name, Transport: agent.MCPStdio, Command: s.Stdio.Command, Args: s.Stdio.Args}
			if len(s.Stdio.Env) > 0 {
				m.Env = make(map[string]string, len(s.Stdio.Env))
				for _, e := range s.Stdio.Env {
					m.Env[e.Name] = e.Value
				}
			}
			out = append(out, m)
		case s.Http != nil:
			out = append(out, agent.MCPServer{Name: s.Http.Name, Transport: agent.MCPHTTP, URL: s.Http.Url, Headers: headerMap(s.Http.Headers)})
		case s.Sse != nil:
			out = append(out, agent.MCPServer{Name: s.Sse.Name, Transport: agent.MCPSSE, URL: s.Sse.Url, Headers: headerMap(s.Sse.Headers)})
		case s.Acp != nil:
			return nil, invalidMCP(fmt.Sprintf("MCP server %q: the %s agent behind tether does not take MCP servers over ACP", s.Acp.Name, f.cfg.Agent))
		default:
			return nil, invalidMCP("an MCP server without a transport")
		}
	}
	if len(f.cfg.Capabilities.MCP) == 0 {
		return nil, invalidMCP(fmt.Sprintf("MCP server %q: the %s agent behind tether takes no MCP servers", out[0].Name, f.cfg.Agent))
	}
	if err := agent.CheckMCPServers(f.cfg.Agent, f.cfg.Capabilities.MCP, out); err != nil {
		return nil, mcpError(err)
	}
	return out, nil
}

func headerMap(h []acpsdk.HttpHeader) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for _, kv := range h {
		out[kv.Name] = kv.Value
	}
	return out
}

func invalidMCP(msg string) error {
	return acpsdk.NewInvalidParams(map[string]any{"error": msg})
}

// mcpError is an MCP server the agent cannot take as invalid params (its
// message names the server and the reason), or nil for another error: the
// core's refusal, or through a runner its sessions API's.
func mcpError(err error) error {
	var unsupported *agent.UnsupportedError
	var ce *client.Error
	switch {
	case errors.As(err, &ce) && (ce.Code == "invalid_mcp_server" || ce.Code == "mcp_transport_unsupported"):
		return invalidMCP(ce.Message)
	case errors.Is(err, agent.ErrInvalidMCPServer), errors.As(err, new(*agent.MCPTransportError)):
		return invalidMCP(err.Error())
	case errors.As(err, &unsupported) && unsupported.Capability == agent.CapabilityMCPServers:
		return invalidMCP(err.Error())
	}
	return nil
}

// reopen starts an ended session again: with servers in place of its
// MCP servers when the editor gives some, else with its own.
func reopenSession(ctx context.Context, core Core, id string, lastSeq uint64, servers []agent.MCPServer) (sessions.Info, error) {
	if len(servers) == 0 {
		return core.Reopen(ctx, id, lastSeq, false)
	}
	re, ok := core.(sessions.MCPReopener)
	if !ok {
		return sessions.Info{}, invalidMCP("the runner behind tether cannot give a session other MCP servers when it resumes")
	}
	return re.ReopenWithMCP(ctx, id, lastSeq, false, servers)
}

var _ sessions.MCPReopener = (*RemoteCore)(nil)

// ReopenWithMCP is Reopen with servers in place of the session's MCP
// servers (POST /v1/sessions/{id}/resume with mcp_servers).
func (c *RemoteCore) ReopenWithMCP(ctx context.Context, id string, _ uint64, _ bool, servers []agent.MCPServer) (sessions.Info, error) {
	s, err := c.client.ResumeWithMCP(ctx, id, servers)
	return info(s), coreError(err)
}
