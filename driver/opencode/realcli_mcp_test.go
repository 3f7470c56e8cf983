package opencode

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/mcpprobe"
)

// The client's MCP servers reach the real CLI over each transport: the
// fake model calls each server's tool (<server>_mark, as OpenCode names
// it), the tool leaves its mark, and its answer, with the tag the server's
// env or headers gave it, comes back in the model's next request. A
// resumed session has them again.
func TestRealCLIMCP(t *testing.T) {
	env := newRealEnv(t, nil)
	marker := filepath.Join(t.TempDir(), "marks")
	streamable, sse := mcpprobe.HTTP(t, marker)
	servers := []agent.MCPServer{
		{Name: "probe", Transport: agent.MCPStdio, Command: mcpprobe.Build(t), Env: map[string]string{mcpprobe.MarkerEnv: marker, mcpprobe.TagEnv: "env-tag"}},
		{Name: "web", Transport: agent.MCPHTTP, URL: streamable, Headers: map[string]string{mcpprobe.TagHeader: "http-tag"}},
		{Name: "oldweb", Transport: agent.MCPSSE, URL: sse, Headers: map[string]string{mcpprobe.TagHeader: "sse-tag"}},
	}
	tags := map[string]string{"probe": "env-tag", "web": "http-tag", "oldweb": "sse-tag"}
	s := mcpprobe.Start(t, env.driver, agent.StartRequest{Workspace: env.ws, Home: env.home, MCPServers: servers})
	var want []string
	for _, server := range []string{"probe", "web", "oldweb"} {
		token := "tok-" + server
		got := s.Turn(t, mcpprobe.Prompt(server+"_"+mcpprobe.Tool, token))
		if text := "tool said: " + mcpprobe.Answer(token, tags[server]); got.Turn.Text != text {
			t.Fatalf("%s: the turn said %q, want %q", server, got.Turn.Text, text)
		}
		want = append(want, token)
	}
	if got := mcpprobe.Marks(t, marker); !slices.Equal(got, want) {
		t.Fatalf("marks %v, want %v", got, want)
	}

	id := s.Session.NativeID()
	if err := s.Session.Close(); err != nil {
		t.Fatal(err)
	}
	r := mcpprobe.Start(t, env.driver, agent.StartRequest{Workspace: env.ws, Home: env.home, Resume: id, MCPServers: servers})
	if got := r.Turn(t, mcpprobe.Prompt("probe_"+mcpprobe.Tool, "tok-resumed")); got.Turn.Text != "tool said: "+mcpprobe.Answer("tok-resumed", "env-tag") {
		t.Fatalf("after the resume the turn said %q", got.Turn.Text)
	}
}
