package sessionsapi_test

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/internal/testing/runnertest"
)

// POST /v1/sessions takes mcp_servers: they reach the agent as given, and
// no answer (the new session, GET of it, the list) echoes them; those the
// agent cannot take are refused with typed 400s. The Go client sends them.
func TestSessionsAPIMCPServers(t *testing.T) {
	rec := runnertest.NewMCPRecorder(agent.MCPStdio, agent.MCPHTTP)
	base := runnertest.SessionsAPI(t, map[string]agent.Driver{"rec": rec, "mock": runnertest.NewMCPRecorder()})
	body := `{"agent":"rec","workspace_id":"w1","mcp_servers":[
		{"name":"notes","transport":"stdio","command":"/usr/bin/notes","args":["--db","x"],"env":{"NOTES_TOKEN":"secret-env-1"}},
		{"name":"web","transport":"http","url":"https://mcp.example/mcp","headers":{"Authorization":"Bearer secret-header-1"}}]}`
	var created struct{ ID string }
	if code := call(t, "POST", base+"/v1/sessions", body, &created); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	want := []agent.MCPServer{
		{Name: "notes", Transport: agent.MCPStdio, Command: "/usr/bin/notes", Args: []string{"--db", "x"}, Env: map[string]string{"NOTES_TOKEN": "secret-env-1"}},
		{Name: "web", Transport: agent.MCPHTTP, URL: "https://mcp.example/mcp", Headers: map[string]string{"Authorization": "Bearer secret-header-1"}},
	}
	if starts := rec.Starts(); len(starts) != 1 || !reflect.DeepEqual(starts[0], want) {
		t.Fatalf("the agent was given %+v", starts)
	}
	for _, path := range []string{"/v1/sessions", "/v1/sessions/" + created.ID} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(data), "secret-") || strings.Contains(string(data), "notes") {
			t.Errorf("GET %s shows the MCP servers: %s", path, data)
		}
	}

	// A resume keeps the session's servers, or takes others.
	for i, body := range []string{"", `{"mcp_servers":[{"name":"web","transport":"http","url":"https://mcp.example/mcp"}]}`} {
		if code := call(t, "DELETE", base+"/v1/sessions/"+created.ID, "", nil); code != http.StatusNoContent {
			t.Fatalf("close: %d", code)
		}
		if code := call(t, "POST", base+"/v1/sessions/"+created.ID+"/resume", body, nil); code != http.StatusOK {
			t.Fatalf("resume %q: %d", body, code)
		}
		wantNow := want
		if i == 1 {
			wantNow = []agent.MCPServer{{Name: "web", Transport: agent.MCPHTTP, URL: "https://mcp.example/mcp"}}
		}
		if starts := rec.Starts(); len(starts) != 2+i || !reflect.DeepEqual(starts[1+i], wantNow) {
			t.Fatalf("resume %q: the agent was given %+v", body, starts[len(starts)-1])
		}
	}
	if code := call(t, "DELETE", base+"/v1/sessions/"+created.ID, "", nil); code != http.StatusNoContent {
		t.Fatalf("close: %d", code)
	}
	var refusedResume struct{ Error struct{ Code string } }
	if code := call(t, "POST", base+"/v1/sessions/"+created.ID+"/resume", `{"mcp_servers":[{"name":"o","transport":"sse","url":"http://x"}]}`, &refusedResume); code != http.StatusBadRequest || refusedResume.Error.Code != "mcp_transport_unsupported" {
		t.Errorf("resume with an SSE server: %d %+v", code, refusedResume)
	}
	startsBefore := len(rec.Starts())

	for body, code := range map[string]string{
		`{"agent":"rec","workspace_id":"w2","mcp_servers":[{"name":"old","transport":"sse","url":"http://x/sse"}]}`:                                                   "mcp_transport_unsupported",
		`{"agent":"mock","workspace_id":"w2","mcp_servers":[{"name":"n","transport":"stdio","command":"/bin/n"}]}`:                                                    "mcp_transport_unsupported",
		`{"agent":"rec","workspace_id":"w2","mcp_servers":[{"name":"n","transport":"stdio","command":"npx"}]}`:                                                        "invalid_mcp_server",
		`{"agent":"rec","workspace_id":"w2","mcp_servers":[{"name":"my.notes","transport":"stdio","command":"/bin/n"}]}`:                                              "invalid_mcp_server",
		`{"agent":"rec","workspace_id":"w2","mcp_servers":[{"name":"n","transport":"http","url":"notaurl"}]}`:                                                         "invalid_mcp_server",
		`{"agent":"rec","workspace_id":"w2","mcp_servers":[{"name":"n","transport":"stdio","command":"/bin/n"},{"name":"n","transport":"stdio","command":"/bin/m"}]}`: "invalid_mcp_server",
		`{"agent":"rec","workspace_id":"w2","mcp_servers":[{"name":"n","transport":"stdio","command":"/bin/n","cwd":"/"}]}`:                                           "invalid_request",
	} {
		var answer struct {
			Error struct{ Code, Message string }
		}
		if got := call(t, "POST", base+"/v1/sessions", body, &answer); got != http.StatusBadRequest || answer.Error.Code != code {
			t.Errorf("%s: %d %+v, want 400 %s", body, got, answer.Error, code)
		}
	}
	if n := len(rec.Starts()); n != startsBefore {
		t.Errorf("refused servers started the agent: %d starts, %d before", n, startsBefore)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &client.Client{BaseURL: base}
	if _, err := c.Create(ctx, client.CreateRequest{Agent: "rec", WorkspaceID: "w3", MCPServers: want[:1]}); err != nil {
		t.Fatal(err)
	}
	if starts := rec.Starts(); len(starts) != startsBefore+1 || !reflect.DeepEqual(starts[startsBefore], want[:1]) {
		t.Fatalf("through the Go client the agent was given %+v", starts)
	}
	_, err := c.Create(ctx, client.CreateRequest{Agent: "rec", WorkspaceID: "w4", MCPServers: []agent.MCPServer{{Name: "old", Transport: agent.MCPSSE, URL: "http://x/sse"}}})
	if e, ok := err.(*client.Error); !ok || e.Status != http.StatusBadRequest || e.Code != "mcp_transport_unsupported" {
		t.Fatalf("an SSE server through the Go client: %v", err)
	}
}
