package agent_test

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
)

func TestCheckMCPServers(t *testing.T) {
	all := []agent.MCPTransport{agent.MCPStdio, agent.MCPHTTP, agent.MCPSSE}
	stdio := agent.MCPServer{Name: "notes", Transport: agent.MCPStdio, Command: "/usr/bin/notes", Args: []string{"--x"}, Env: map[string]string{"TOKEN": "s"}}
	web := agent.MCPServer{Name: "web-1", Transport: agent.MCPHTTP, URL: "https://mcp.example/mcp", Headers: map[string]string{"Authorization": "Bearer s"}}
	with := func(s agent.MCPServer, f func(*agent.MCPServer)) agent.MCPServer { f(&s); return s }
	invalid := map[string][]agent.MCPServer{
		"empty name":       {with(stdio, func(s *agent.MCPServer) { s.Name = "" })},
		"duplicate":        {stdio, with(web, func(s *agent.MCPServer) { s.Name = "notes" })},
		"dot in name":      {with(stdio, func(s *agent.MCPServer) { s.Name = "my.notes" })},
		"space in name":    {with(stdio, func(s *agent.MCPServer) { s.Name = "my notes" })},
		"double _":         {with(stdio, func(s *agent.MCPServer) { s.Name = "a__b" })},
		"digit first":      {with(stdio, func(s *agent.MCPServer) { s.Name = "1notes" })},
		"long name":        {with(stdio, func(s *agent.MCPServer) { s.Name = "n" + strings.Repeat("x", agent.MaxMCPServerName) })},
		"relative command": {with(stdio, func(s *agent.MCPServer) { s.Command = "npx" })},
		"no command":       {with(stdio, func(s *agent.MCPServer) { s.Command = "" })},
		"stdio with url":   {with(stdio, func(s *agent.MCPServer) { s.URL = "http://x" })},
		"bad env":          {with(stdio, func(s *agent.MCPServer) { s.Env = map[string]string{"A=B": "c"} })},
		"relative url":     {with(web, func(s *agent.MCPServer) { s.URL = "/mcp" })},
		"ftp url":          {with(web, func(s *agent.MCPServer) { s.URL = "ftp://host/mcp" })},
		"http with cmd":    {with(web, func(s *agent.MCPServer) { s.Command = "/bin/x" })},
		"bad header":       {with(web, func(s *agent.MCPServer) { s.Headers = map[string]string{"X": "a\r\nB: c"} })},
		"no transport":     {with(stdio, func(s *agent.MCPServer) { s.Transport = "" })},
		"unknown":          {with(stdio, func(s *agent.MCPServer) { s.Transport = "ws" })},
	}
	for name, servers := range invalid {
		t.Run(name, func(t *testing.T) {
			err := agent.CheckMCPServers("a", all, servers)
			var me *agent.MCPServerError
			if !errors.As(err, &me) || !errors.Is(err, agent.ErrInvalidMCPServer) {
				t.Fatalf("err = %v, want an *MCPServerError", err)
			}
		})
	}
	if err := agent.CheckMCPServers("a", all, []agent.MCPServer{stdio, web}); err != nil {
		t.Fatalf("valid servers: %v", err)
	}
	err := agent.CheckMCPServers("a", []agent.MCPTransport{agent.MCPStdio}, []agent.MCPServer{stdio, web})
	var te *agent.MCPTransportError
	if !errors.As(err, &te) || te.Server != "web-1" || te.Transport != agent.MCPHTTP || !errors.Is(err, agent.ErrUnsupported) {
		t.Fatalf("an http server to a stdio-only agent: %v", err)
	}
	err = agent.CheckMCPServers("a", nil, []agent.MCPServer{stdio})
	var ue *agent.UnsupportedError
	if !errors.As(err, &ue) {
		t.Fatalf("servers to an agent that takes none: %v", err)
	}
	if err := agent.CheckMCPServers("a", nil, nil); err != nil {
		t.Fatalf("no servers: %v", err)
	}
}

// The secrets of a server stay out of its string, its log value and its
// redacted copy.
func TestMCPServerSecretsStayOut(t *testing.T) {
	s := agent.MCPServer{Name: "n", Transport: agent.MCPHTTP, URL: "https://user:pw@host/mcp?token=q1",
		Headers: map[string]string{"Authorization": "Bearer h1"}}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("x", "server", s)
	r := s.Redacted()
	for _, out := range []string{s.String(), b.String(), fmt.Sprint(r.Headers)} {
		for _, secret := range []string{"pw", "q1", "h1"} {
			if strings.Contains(out, secret) {
				t.Errorf("%q shows the secret %q", out, secret)
			}
		}
	}
	if s.Headers["Authorization"] != "Bearer h1" {
		t.Error("Redacted changed the original")
	}
}
