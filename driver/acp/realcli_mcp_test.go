package acp_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/acp"
	"github.com/tetherhq/tether/driver/acp/opencodeacp"
	"github.com/tetherhq/tether/internal/testing/fakegemini"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
	"github.com/tetherhq/tether/internal/testing/mcpprobe"
)

// probeServers are the probe over each transport, marking marker, with the
// tag each one's env or headers give it.
func probeServers(t *testing.T, marker string) ([]agent.MCPServer, map[string]string) {
	streamable, sse := mcpprobe.HTTP(t, marker)
	return []agent.MCPServer{
			{Name: "probe", Transport: agent.MCPStdio, Command: mcpprobe.Build(t), Env: map[string]string{mcpprobe.MarkerEnv: marker, mcpprobe.TagEnv: "env-tag"}},
			{Name: "web", Transport: agent.MCPHTTP, URL: streamable, Headers: map[string]string{mcpprobe.TagHeader: "http-tag"}},
			{Name: "oldweb", Transport: agent.MCPSSE, URL: sse, Headers: map[string]string{mcpprobe.TagHeader: "sse-tag"}},
		},
		map[string]string{"probe": "env-tag", "web": "http-tag", "oldweb": "sse-tag"}
}

// offered are the names of the tools the requests offered the model, for
// a failure's message.
func offered(reqs []fakehttp.Request) string {
	var names []string
	for _, r := range reqs {
		var body struct {
			Tools []struct {
				FunctionDeclarations []struct{ Name string } `json:"functionDeclarations"`
				Function             struct{ Name string }
			}
		}
		_ = json.Unmarshal(r.Body, &body)
		for _, tool := range body.Tools {
			for _, f := range tool.FunctionDeclarations {
				names = append(names, f.Name)
			}
			if tool.Function.Name != "" {
				names = append(names, tool.Function.Name)
			}
		}
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), " ")
}

// mcpJourney has the fake model call each server's tool, named by
// toolName, and checks that the tool ran and its answer reached the
// model.
func mcpJourney(t *testing.T, d agent.Driver, req agent.StartRequest, tags map[string]string, marker string,
	toolName func(server string) string, requests func() []fakehttp.Request) *mcpprobe.Session {
	t.Helper()
	s := mcpprobe.Start(t, d, req)
	var want []string
	for _, server := range slices.Sorted(func(yield func(string) bool) {
		for k := range tags {
			if !yield(k) {
				return
			}
		}
	}) {
		token := "tok-" + server
		got := s.Turn(t, mcpprobe.Prompt(toolName(server), token))
		if answer := mcpprobe.Answer(token, tags[server]); !strings.HasPrefix(got.Turn.Text, "tool said: ") || !strings.Contains(got.Turn.Text, answer) {
			t.Fatalf("%s: the turn said %q, want the answer %q; tools offered: %s", server, got.Turn.Text, answer, offered(requests()))
		}
		want = append(want, token)
	}
	if got := mcpprobe.Marks(t, marker); !slices.Equal(got, want) {
		t.Fatalf("marks %v, want %v", got, want)
	}
	return s
}

// The client's MCP servers reach Gemini CLI in session/new, over each
// transport its initialize declares: the fake model calls each server's
// tool, the tool leaves its mark, and its answer comes back in the
// model's next request.
func TestRealCLIGeminiMCP(t *testing.T) {
	d, fake := geminiDriver(t, fakegemini.Options{})
	marker := filepath.Join(t.TempDir(), "marks")
	servers, tags := probeServers(t, marker)
	mcpJourney(t, d, agent.StartRequest{Workspace: t.TempDir(), Home: t.TempDir(), MCPServers: servers}, tags, marker,
		func(server string) string { return "mcp_" + server + "_" + mcpprobe.Tool }, fake.Requests)
	if got := d.Capabilities().MCP; !slices.Equal(got, []agent.MCPTransport{agent.MCPStdio, agent.MCPHTTP, agent.MCPSSE}) {
		t.Errorf("capabilities after the initialize: MCP %v", got)
	}
}

// The same through `opencode acp`, and again in session/load of a new
// process.
func TestRealCLIOpenCodeACPMCP(t *testing.T) {
	cfg, home, fake := openCodeEnv(t)
	d, err := acp.New(cfg, opencodeacp.Spec())
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "marks")
	servers, tags := probeServers(t, marker)
	ws := t.TempDir()
	s := mcpJourney(t, d, agent.StartRequest{Workspace: ws, Home: home, MCPServers: servers}, tags, marker,
		func(server string) string { return server + "_" + mcpprobe.Tool }, fake.Requests)
	id := s.Session.NativeID()
	if err := s.Session.Close(); err != nil {
		t.Fatal(err)
	}
	r := mcpprobe.Start(t, d, agent.StartRequest{Workspace: ws, Home: home, Resume: id, MCPServers: servers})
	if got := r.Turn(t, mcpprobe.Prompt("probe_"+mcpprobe.Tool, "tok-loaded")); !strings.Contains(got.Turn.Text, mcpprobe.Answer("tok-loaded", "env-tag")) {
		t.Fatalf("after session/load the turn said %q", got.Turn.Text)
	}
}
