package claudecli_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/mcpprobe"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// The client's MCP servers reach the real CLI over each transport: the
// fake model calls each server's tool (mcp__<server>__mark), the tool
// leaves its mark, and its answer, with the tag the server's env or
// headers gave it, comes back in the model's next request. A resumed
// session has them again.
func TestRealCLIMCPClaude(t *testing.T) {
	cli := testenv.RequireClaudeCLI(t)
	srv, err := fakeanthropic.Start(fakeanthropic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	home, ws := t.TempDir(), t.TempDir()
	env := map[string]string{}
	for _, kv := range testenv.ClaudeEnv(home, srv.URL()) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	d, err := claudecli.New(claudecli.Config{CLIPath: cli, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "marks")
	streamable, sse := mcpprobe.HTTP(t, marker)
	servers := []agent.MCPServer{
		{Name: "probe", Transport: agent.MCPStdio, Command: mcpprobe.Build(t), Env: map[string]string{mcpprobe.MarkerEnv: marker, mcpprobe.TagEnv: "env-tag"}},
		{Name: "web", Transport: agent.MCPHTTP, URL: streamable, Headers: map[string]string{mcpprobe.TagHeader: "http-tag"}},
		{Name: "old-web", Transport: agent.MCPSSE, URL: sse, Headers: map[string]string{mcpprobe.TagHeader: "sse-tag"}},
	}
	tags := map[string]string{"probe": "env-tag", "web": "http-tag", "old-web": "sse-tag"}
	s := mcpprobe.Start(t, d, agent.StartRequest{Workspace: ws, Home: home, MCPServers: servers})
	var want []string
	for _, server := range []string{"probe", "web", "old-web"} {
		token := "tok-" + server
		got := s.Turn(t, mcpprobe.Prompt("mcp__"+server+"__"+mcpprobe.Tool, token))
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
	r := mcpprobe.Start(t, d, agent.StartRequest{Workspace: ws, Home: home, Resume: id, MCPServers: servers})
	if got := r.Turn(t, mcpprobe.Prompt("mcp__probe__"+mcpprobe.Tool, "tok-resumed")); got.Turn.Text != "tool said: "+mcpprobe.Answer("tok-resumed", "env-tag") {
		t.Fatalf("after the resume the turn said %q", got.Turn.Text)
	}
}

// A server the agent cannot use is refused before anything starts.
func TestMCPClaudeRefusals(t *testing.T) {
	d, err := claudecli.New(claudecli.Config{CLIPath: "/bin/true"})
	if err != nil {
		t.Skipf("no driver: %v", err)
	}
	ws := t.TempDir()
	_, err = d.Start(t.Context(), agent.StartRequest{Workspace: ws, Home: t.TempDir(),
		MCPServers: []agent.MCPServer{{Name: "x", Transport: agent.MCPStdio, Command: "relative"}}})
	var bad *agent.MCPServerError
	if !errors.As(err, &bad) {
		t.Fatalf("a relative command: %v", err)
	}
	_, err = d.Start(t.Context(), agent.StartRequest{Workspace: ws, Home: t.TempDir(), Options: []byte(`{"sdk_mcp_servers":["calc"]}`),
		MCPServers: []agent.MCPServer{{Name: "calc", Transport: agent.MCPStdio, Command: "/bin/cat"}}})
	if !errors.As(err, &bad) || bad.Server != "calc" {
		t.Fatalf("the name of an in-process server: %v", err)
	}
}
