package claudecli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/tetherhq/tether/agent"
)

// mcpServers checks the session's MCP servers and encodes each as
// --mcp-config takes it. They go with the in-process servers a protocol v1
// host serves (session_opts sdk_mcp_servers), whose names they must not
// take.
func (d *Driver) mcpServers(req agent.StartRequest) (map[string]json.RawMessage, error) {
	if err := agent.CheckMCPServers(d.Name(), mcpTransports(), req.MCPServers); err != nil {
		return nil, err
	}
	if len(req.MCPServers) == 0 {
		return nil, nil
	}
	o, err := ParseOptions(req.Options)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(req.MCPServers))
	for _, s := range req.MCPServers {
		if slices.Contains(o.SDKMCPServers, s.Name) {
			return nil, &agent.MCPServerError{Server: s.Name, Reason: "an in-process MCP server of the session has that name"}
		}
		raw, err := json.Marshal(mcpConfigEntry(s))
		if err != nil {
			return nil, fmt.Errorf("claudecli: MCP server %q: %w", s.Name, err)
		}
		out[s.Name] = raw
	}
	return out, nil
}

// mcpConfigFile holds a session's MCP servers in its home: their env and
// headers may hold the client's secrets, which argv would show every
// local user (/proc/<pid>/cmdline).
const mcpConfigFile = ".tether/mcp-config.json"

// mcpConfigArgs are the arguments that give the CLI the client's MCP
// servers: --mcp-config with a file of the home's (inline without a
// home), written afresh at each start.
func mcpConfigArgs(home string, servers map[string]json.RawMessage) ([]string, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	config, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		return nil, fmt.Errorf("claudecli: MCP configuration: %w", err)
	}
	if home == "" {
		return []string{"--mcp-config", string(config)}, nil
	}
	path := filepath.Join(home, mcpConfigFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("claudecli: MCP configuration: %w", err)
	}
	if err := os.WriteFile(path, config, 0o600); err != nil {
		return nil, fmt.Errorf("claudecli: MCP configuration: %w", err)
	}
	return []string{"--mcp-config", path}, nil
}

// mcpConfigEntry is one server of --mcp-config's mcpServers.
func mcpConfigEntry(s agent.MCPServer) map[string]any {
	if s.Transport == agent.MCPStdio {
		e := map[string]any{"type": "stdio", "command": s.Command, "args": nonNil(s.Args)}
		if len(s.Env) > 0 {
			e["env"] = s.Env
		}
		return e
	}
	e := map[string]any{"type": string(s.Transport), "url": s.URL}
	if len(s.Headers) > 0 {
		e["headers"] = s.Headers
	}
	return e
}

func nonNil(a []string) []string {
	if a == nil {
		return []string{}
	}
	return a
}
