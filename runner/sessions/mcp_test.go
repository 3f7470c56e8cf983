package sessions_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// openMCPCore opens a sessions core on dir's files, with an index, whose
// kind "rec" takes stdio and http MCP servers and "mock" none.
func openMCPCore(t *testing.T, dir string, rec agent.Driver) (*sessions.Manager, *eventlog.Bolt, *approvals.Store) {
	t.Helper()
	ws, err := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{"rec": rec, "mock": mock.New(mock.Config{})},
		Workspaces: ws, Log: log, Approvals: store, IndexDir: filepath.Join(dir, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	return m, log, store
}

// A session's MCP servers reach its agent, and reach it again when the
// session is reopened after a restart (from the index); its Info does not
// show them. Servers the agent cannot take are refused with typed errors
// before anything starts.
func TestMCPServers(t *testing.T) {
	dir := t.TempDir()
	rec := runnertest.NewMCPRecorder(agent.MCPStdio, agent.MCPHTTP)
	m, log, store := openMCPCore(t, dir, rec)
	servers := []agent.MCPServer{
		{Name: "notes", Transport: agent.MCPStdio, Command: "/bin/notes", Env: map[string]string{"NOTES_TOKEN": "secret-env-1"}},
		{Name: "web", Transport: agent.MCPHTTP, URL: "https://mcp.example/mcp", Headers: map[string]string{"Authorization": "Bearer secret-header-1"}},
	}
	info, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "rec", WorkspaceID: "w1", MCPServers: servers})
	if err != nil {
		t.Fatal(err)
	}
	for _, shown := range []any{info, m.List()} {
		b, _ := json.Marshal(shown)
		if strings.Contains(string(b), "secret-") || strings.Contains(string(b), "mcp.example") {
			t.Errorf("the session's description shows its MCP servers: %s", b)
		}
	}
	if err := m.Close(ctx(t), info.ID); err != nil {
		t.Fatal(err)
	}
	shutdown(t, m, log, store)

	m, log, store = openMCPCore(t, dir, rec)
	defer shutdown(t, m, log, store)
	if _, err := m.Reopen(ctx(t), info.ID, 0, false); err != nil {
		t.Fatal(err)
	}
	if starts := rec.Starts(); len(starts) != 2 || !reflect.DeepEqual(starts[0], servers) || !reflect.DeepEqual(starts[1], servers) {
		t.Fatalf("the agent's starts were given %+v, want %+v twice", starts, servers)
	}

	refused := []struct {
		agent   string
		servers []agent.MCPServer
		as      func(error) bool
	}{
		{"rec", []agent.MCPServer{{Name: "old", Transport: agent.MCPSSE, URL: "http://x/sse"}},
			func(err error) bool { var e *agent.MCPTransportError; return errors.As(err, &e) && e.Server == "old" }},
		{"rec", []agent.MCPServer{{Name: "a b", Transport: agent.MCPStdio, Command: "/bin/x"}},
			func(err error) bool { var e *agent.MCPServerError; return errors.As(err, &e) }},
		{"rec", []agent.MCPServer{servers[0], servers[0]},
			func(err error) bool { var e *agent.MCPServerError; return errors.As(err, &e) && e.Server == "notes" }},
		{"mock", servers[:1],
			func(err error) bool { var e *agent.UnsupportedError; return errors.As(err, &e) }},
	}
	for i, c := range refused {
		_, err := m.Create(ctx(t), sessions.CreateRequest{Agent: c.agent, WorkspaceID: "w-refused", MCPServers: c.servers})
		if !c.as(err) {
			t.Errorf("case %d: %v", i, err)
		}
	}
	if n := len(rec.Starts()); n != 2 {
		t.Errorf("refused servers started the agent: %d starts", n)
	}
}
