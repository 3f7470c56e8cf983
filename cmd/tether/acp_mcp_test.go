package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/internal/testing/acpclient"
	"github.com/tetherhq/tether/internal/testing/mcpprobe"
)

// initACP starts `tether acp` with args and returns its initialize answer
// too.
func initACP(t *testing.T, env []string, args ...string) (*acpclient.Client, acp.InitializeResponse) {
	t.Helper()
	c := acpclient.Start(t, t.TempDir(), env, tetherPath(), append([]string{"acp"}, args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	init, err := c.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	if err != nil {
		t.Fatalf("initialize: %v\n%s", err, c.Stderr.String())
	}
	c.CanLoad = init.AgentCapabilities.LoadSession
	return c, init
}

// refusedMCP checks that err is invalid params whose message names the
// server.
func refusedMCP(t *testing.T, what string, err error, server string) {
	t.Helper()
	var re *acp.RequestError
	if !isCode(err, -32602) || !errors.As(err, &re) || !strings.Contains(re.Error(), server) {
		t.Fatalf("%s: %v, want invalid params naming %q", what, err, server)
	}
}

func stdioServer(name, command string, env ...acp.EnvVariable) acp.McpServer {
	return acp.McpServer{Stdio: &acp.McpServerStdio{Name: name, Command: command, Args: []string{}, Env: append([]acp.EnvVariable{}, env...)}}
}

// The mock takes no MCP servers: initialize declares neither http nor
// sse, and a session/new or session/load that names a server is refused
// with invalid params naming it; the session goes on.
func TestACPMockMCPRefused(t *testing.T) {
	cwd := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	c, init := initACP(t, acpEnv(), "--agent", "mock", "--data-dir", filepath.Join(t.TempDir(), "acp"))
	if mc := init.AgentCapabilities.McpCapabilities; mc.Http || mc.Sse {
		t.Fatalf("mcpCapabilities %+v", mc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	notes := stdioServer("notes", "/bin/cat")
	_, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{notes}})
	refusedMCP(t, "session/new with a stdio server", err, "notes")
	s, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	_, err = c.LoadSession(ctx, acp.LoadSessionRequest{SessionId: s.SessionId, Cwd: cwd, McpServers: []acp.McpServer{notes}})
	refusedMCP(t, "session/load with a stdio server", err, "notes")
	_, err = c.ResumeSession(ctx, acp.ResumeSessionRequest{SessionId: s.SessionId, Cwd: cwd, McpServers: []acp.McpServer{notes}})
	refusedMCP(t, "session/resume with a stdio server", err, "notes")
	if r, err := prompt(ctx, c, s.SessionId, "hello"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("the session after the refusals: %+v %v\n%s", r, err, c.Stderr.String())
	}
}

// Codex takes stdio and streamable HTTP MCP servers, not SSE: initialize
// says so, an SSE server is refused with invalid params that name it, and
// the session goes on.
func TestRealCLIACPMCPCodexRefusesSSE(t *testing.T) {
	env, args := realAgentACP(t, "codex")
	c, init := initACP(t, env, args...)
	if mc := init.AgentCapabilities.McpCapabilities; !mc.Http || mc.Sse {
		t.Fatalf("mcpCapabilities %+v", mc)
	}
	cwd := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	old := acp.McpServer{Sse: &acp.McpServerSseInline{Type: "sse", Name: "oldweb", Url: "http://127.0.0.1:9/sse", Headers: []acp.HttpHeader{}}}
	_, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{old}})
	refusedMCP(t, "session/new with an SSE server", err, "oldweb")
	s, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v\n%s", err, c.Stderr.String())
	}
	_, err = c.LoadSession(ctx, acp.LoadSessionRequest{SessionId: s.SessionId, Cwd: cwd, McpServers: []acp.McpServer{old}})
	refusedMCP(t, "session/load with an SSE server", err, "oldweb")
	if r, err := prompt(ctx, c, s.SessionId, "SAY still here"); err != nil || r.StopReason != acp.StopReasonEndTurn || !strings.Contains(text(c.Updates(), false), "still here") {
		t.Fatalf("the session after the refusals: %+v %v\n%s", r, err, c.Stderr.String())
	}
}

// An editor's MCP servers reach Claude Code behind tether acp: locally a
// stdio server and a streamable HTTP one; through a sandboxed runner the
// HTTP one (a stdio server would run inside the runner's sandbox, where
// the test's files are not). The fake model calls each server's tool, the
// tool leaves its mark, and its answer reaches the model.
func TestRealCLIACPMCPClaude(t *testing.T)       { realACPMCP(t, false) }
func TestRealCLIACPMCPRunnerClaude(t *testing.T) { realACPMCP(t, true) }

func realACPMCP(t *testing.T, remote bool) {
	env, args := realAgentACP(t, "claude")
	if remote {
		p := startServe(t, env, "--sandbox", "on", "--cli", "claude="+args[len(args)-1])
		env, args = acpEnv("TETHER_AUTH_TOKEN="+testToken), []string{"--agent", "claude", "--runner", "http://" + p.addr}
	}
	c, init := initACP(t, env, args...)
	if mc := init.AgentCapabilities.McpCapabilities; !mc.Http || !mc.Sse {
		t.Fatalf("mcpCapabilities %+v", mc)
	}
	marker := filepath.Join(t.TempDir(), "marks")
	streamable, _ := mcpprobe.HTTP(t, marker)
	servers := []acp.McpServer{{Http: &acp.McpServerHttpInline{Type: "http", Name: "web", Url: streamable,
		Headers: []acp.HttpHeader{{Name: mcpprobe.TagHeader, Value: "http-tag"}}}}}
	tags := map[string]string{"web": "http-tag"}
	if !remote {
		servers = append(servers, stdioServer("probe", mcpprobe.Build(t),
			acp.EnvVariable{Name: mcpprobe.MarkerEnv, Value: marker}, acp.EnvVariable{Name: mcpprobe.TagEnv, Value: "env-tag"}))
		tags["probe"] = "env-tag"
	}
	cwd := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*waitLimit)
	defer cancel()
	s, err := c.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: servers})
	if err != nil {
		t.Fatalf("session/new: %v\n%s", err, c.Stderr.String())
	}
	c.Answer(acp.PermissionOptionKindAllowOnce)
	var want []string
	for _, server := range slices.Sorted(func(yield func(string) bool) {
		for k := range tags {
			if !yield(k) {
				return
			}
		}
	}) {
		c.Reset()
		token := "tok-" + server
		r, err := prompt(ctx, c, s.SessionId, mcpprobe.Prompt("mcp__"+server+"__"+mcpprobe.Tool, token))
		if got := text(c.Updates(), false); err != nil || r.StopReason != acp.StopReasonEndTurn || !strings.Contains(got, "tool said: "+mcpprobe.Answer(token, tags[server])) {
			t.Fatalf("%s: %+v %v, agent text %q\n%s", server, r, err, got, c.Stderr.String())
		}
		want = append(want, token)
	}
	if got := mcpprobe.Marks(t, marker); !slices.Equal(got, want) {
		t.Fatalf("marks %v, want %v", got, want)
	}
}
