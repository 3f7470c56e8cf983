package codex_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/mcpprobe"
)

// The client's MCP servers reach the real CLI, stdio and streamable HTTP:
// the fake model calls each server's tool (mark in the namespace tool
// mcp__<server>, as Codex offers it to a model without tool search), the tool
// leaves its mark, and its answer, with the tag the server's env or
// headers gave it, comes back in the model's next request. A resumed
// thread has them again; an SSE server is refused.
// mcpModel is a model Codex's catalog does not know: it offers such a model
// the MCP servers' tools at once, where it gives the models it knows a
// tool_search tool to find them with (which the fake does not script).
const mcpModel = "gpt-4.1"

func TestRealCLIMCPCodex(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	var err error
	marker := filepath.Join(t.TempDir(), "marks")
	streamable, sse := mcpprobe.HTTP(t, marker)
	servers := []agent.MCPServer{
		{Name: "probe", Transport: agent.MCPStdio, Command: mcpprobe.Build(t), Env: map[string]string{mcpprobe.MarkerEnv: marker, mcpprobe.TagEnv: "env-tag"}},
		{Name: "web", Transport: agent.MCPHTTP, URL: streamable, Headers: map[string]string{mcpprobe.TagHeader: "http-tag"}},
	}
	s := mcpprobe.Start(t, r.drv, agent.StartRequest{Workspace: r.ws, Home: r.home, MCPServers: servers, Model: mcpModel})
	for server, tag := range map[string]string{"probe": "env-tag", "web": "http-tag"} {
		token := "tok-" + server
		got := s.Turn(t, mcpprobe.Prompt("mcp__"+server+"/"+mcpprobe.Tool, token))
		// Codex puts the call's wall time before the tool's output.
		if answer := mcpprobe.Answer(token, tag); !strings.HasPrefix(got.Turn.Text, "tool said: ") || !strings.HasSuffix(got.Turn.Text, "\n"+answer) {
			t.Fatalf("%s: the turn said %q, want the answer %q", server, got.Turn.Text, answer)
		}
	}
	marks := mcpprobe.Marks(t, marker)
	slices.Sort(marks)
	if !slices.Equal(marks, []string{"tok-probe", "tok-web"}) {
		t.Fatalf("marks %v", marks)
	}

	id := s.Session.NativeID()
	if err := s.Session.Close(); err != nil {
		t.Fatal(err)
	}
	resumed := mcpprobe.Start(t, r.drv, agent.StartRequest{Workspace: r.ws, Home: r.home, Resume: id, MCPServers: servers, Model: mcpModel})
	if got := resumed.Turn(t, mcpprobe.Prompt("mcp__probe/"+mcpprobe.Tool, "tok-resumed")); !strings.HasSuffix(got.Turn.Text, "\n"+mcpprobe.Answer("tok-resumed", "env-tag")) {
		t.Fatalf("after the resume the turn said %q", got.Turn.Text)
	}

	_, err = r.drv.Start(ctxFor(t), agent.StartRequest{Workspace: r.ws, Home: r.home,
		MCPServers: []agent.MCPServer{{Name: "old", Transport: agent.MCPSSE, URL: sse}}})
	var te *agent.MCPTransportError
	if !errors.As(err, &te) || te.Server != "old" {
		t.Fatalf("an SSE server: %v", err)
	}
}
