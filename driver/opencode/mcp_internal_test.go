package opencode

import (
	"encoding/json"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/internal/agentproc"
	"github.com/tetherhq/tether/sandbox"
)

// The session's MCP servers join those of the operator's
// OPENCODE_CONFIG_CONTENT, and the tool shell stays.
func TestServerEnvMCP(t *testing.T) {
	d := &Driver{cfg: driver.Config{Env: []string{`OPENCODE_CONFIG_CONTENT={"mcp":{"ops":{"type":"remote","url":"http://ops"}},"theme":"x"}`}}}
	servers := []agent.MCPServer{
		{Name: "notes", Transport: agent.MCPStdio, Command: "/bin/notes", Args: []string{"-v"}, Env: map[string]string{"K": "v"}},
		{Name: "web", Transport: agent.MCPSSE, URL: "http://web/sse", Headers: map[string]string{"H": "h"}},
	}
	env, err := d.env("/h", "pw", true, servers)
	if err != nil {
		t.Fatal(err)
	}
	var content struct {
		Shell string
		Theme string
		MCP   map[string]map[string]any
	}
	if err := json.Unmarshal([]byte(agentproc.EnvMap(env)["OPENCODE_CONFIG_CONTENT"]), &content); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(content.MCP)
	want := `{"notes":{"command":["/bin/notes","-v"],"enabled":true,"environment":{"K":"v"},"type":"local"},` +
		`"ops":{"type":"remote","url":"http://ops"},"web":{"enabled":true,"headers":{"H":"h"},"type":"remote","url":"http://web/sse"}}`
	if string(b) != want || content.Shell != sandbox.ToolShellPath || content.Theme != "x" {
		t.Errorf("config content: shell %q theme %q mcp %s\nwant mcp %s", content.Shell, content.Theme, b, want)
	}
}
