package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// MCPTransport is how an agent reaches an MCP server.
type MCPTransport string

const (
	// MCPStdio: the agent runs the server's command as its own child and
	// speaks to it over its stdio.
	MCPStdio MCPTransport = "stdio"
	// MCPHTTP: the server is at a URL, spoken to over streamable HTTP.
	MCPHTTP MCPTransport = "http"
	// MCPSSE: the server is at a URL, spoken to over HTTP with server-sent
	// events (the older transport).
	MCPSSE MCPTransport = "sse"
)

// MCPServer is an MCP server a client gives a session: the agent connects
// to it and offers its tools to the model. Command, Args and Env belong to
// stdio; URL and Headers to http and sse. Env and Headers may hold the
// client's secrets for the server: they are never logged, and a session's
// description leaves them out.
type MCPServer struct {
	// Name is the server's name in the agent's tool names
	// (mcp__<name>__<tool> for Claude Code): letters, digits, '-' and
	// '_', starting with a letter, without "__".
	Name      string       `json:"name"`
	Transport MCPTransport `json:"transport"`
	// Command is an absolute path: the agent's PATH is the runner's, not
	// the client's.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// MaxMCPServerName bounds a server's name: an agent's tool name holds it
// and the tool's, and the model APIs take tool names of 64 characters.
const MaxMCPServerName = 32

// ErrInvalidMCPServer matches an *MCPServerError.
var ErrInvalidMCPServer = errors.New("agent: invalid MCP server")

// MCPServerError refuses an MCP server that no agent could use as given.
type MCPServerError struct {
	Server string // its name, as given (may be empty)
	Reason string
}

func (e *MCPServerError) Error() string {
	return fmt.Sprintf("agent: MCP server %q: %s", e.Server, e.Reason)
}

func (e *MCPServerError) Is(target error) bool { return target == ErrInvalidMCPServer }

// MCPTransportError refuses an MCP server whose transport the agent does
// not take (Capabilities.MCP); it is an unsupported capability.
type MCPTransportError struct {
	Agent     string
	Server    string
	Transport MCPTransport
	// Takes are the transports the agent takes.
	Takes []MCPTransport
}

func (e *MCPTransportError) Error() string {
	takes := "none"
	if len(e.Takes) > 0 {
		parts := make([]string, len(e.Takes))
		for i, t := range e.Takes {
			parts[i] = string(t)
		}
		takes = strings.Join(parts, ", ")
	}
	return fmt.Sprintf("agent: MCP server %q: %s does not take %s MCP servers (it takes: %s)", e.Server, e.Agent, e.Transport, takes)
}

func (e *MCPTransportError) Is(target error) bool { return target == ErrUnsupported }

// CapabilityMCPServers is the capability an *UnsupportedError names when
// an agent that takes no MCP servers is given some.
const CapabilityMCPServers = "take MCP servers"

// CheckMCPServers checks servers for an agent that takes the transports
// takes: each server on its own (CheckMCPServer), names unique, and each
// transport one the agent takes. An agent that takes none refuses any
// server with an *UnsupportedError.
func CheckMCPServers(agentName string, takes []MCPTransport, servers []MCPServer) error {
	if len(servers) == 0 {
		return nil
	}
	if len(takes) == 0 {
		return &UnsupportedError{Agent: agentName, Capability: CapabilityMCPServers}
	}
	seen := make(map[string]bool, len(servers))
	for _, s := range servers {
		if err := CheckMCPServer(s); err != nil {
			return err
		}
		if seen[s.Name] {
			return &MCPServerError{Server: s.Name, Reason: "the name is given twice"}
		}
		seen[s.Name] = true
		if !slices.Contains(takes, s.Transport) {
			return &MCPTransportError{Agent: agentName, Server: s.Name, Transport: s.Transport, Takes: slices.Clone(takes)}
		}
	}
	return nil
}

// CheckMCPServer checks one server on its own: its name, and its
// transport's fields (and none of the other's).
func CheckMCPServer(s MCPServer) error {
	bad := func(format string, a ...any) error {
		return &MCPServerError{Server: s.Name, Reason: fmt.Sprintf(format, a...)}
	}
	if reason := checkMCPName(s.Name); reason != "" {
		return bad("%s", reason)
	}
	switch s.Transport {
	case MCPStdio:
		switch {
		case s.Command == "":
			return bad("a stdio server needs a command")
		case !filepath.IsAbs(s.Command):
			return bad("the command %q is not an absolute path (the agent's PATH is the runner's)", s.Command)
		case s.URL != "" || len(s.Headers) > 0:
			return bad("a stdio server has no url or headers")
		case strings.ContainsRune(s.Command, 0) || slices.ContainsFunc(s.Args, func(a string) bool { return strings.ContainsRune(a, 0) }):
			return bad("the command line holds a NUL byte")
		}
		for k, v := range s.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
				return bad("the environment variable %q is not one a process can have", k)
			}
		}
	case MCPHTTP, MCPSSE:
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			return bad("an %s server has no command, args or env", s.Transport)
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("the url must be an absolute http or https URL")
		}
		for k, v := range s.Headers {
			if !headerName(k) || strings.ContainsAny(v, "\r\n\x00") {
				return bad("the header %q is not one HTTP can carry", k)
			}
		}
	case "":
		return bad("no transport (stdio, http or sse)")
	default:
		return bad("unknown transport %q (stdio, http or sse)", s.Transport)
	}
	return nil
}

// checkMCPName says what is wrong with a server's name, or "". The
// agents put it in tool names (Claude Code and Codex mcp__<name>__<tool>,
// OpenCode <name>_<tool>, Gemini CLI <name>__<tool>), which the model APIs
// restrict to letters, digits, '_' and '-'; Claude Code splits its tool
// names at "__".
func checkMCPName(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case len(name) > MaxMCPServerName:
		return fmt.Sprintf("the name is longer than %d characters", MaxMCPServerName)
	case !('a' <= name[0] && name[0] <= 'z' || 'A' <= name[0] && name[0] <= 'Z'):
		return "the name must start with a letter"
	case strings.Contains(name, "__"):
		return `the name must not hold "__" (agents split tool names there)`
	}
	for _, r := range name {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-') {
			return "the name may hold only letters, digits, '-' and '_' (it becomes part of tool names)"
		}
	}
	return ""
}

// headerName reports whether k is an HTTP header name (a token).
func headerName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// Redacted is s without its secrets: the names of its environment
// variables and headers stay, their values are left out.
func (s MCPServer) Redacted() MCPServer {
	r := s
	r.Env = redact(s.Env)
	r.Headers = redact(s.Headers)
	return r
}

func redact(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = "(redacted)"
	}
	return out
}

// String names the server without its secrets: the command, or the URL's
// host (a URL's user, path or query may hold a token).
func (s MCPServer) String() string {
	target := s.Command
	if s.Transport != MCPStdio {
		target = s.URL
		if u, err := url.Parse(s.URL); err == nil {
			target = u.Scheme + "://" + u.Host
		}
	}
	return fmt.Sprintf("%s (%s %s)", s.Name, s.Transport, target)
}

// LogValue keeps the server's secrets out of logs.
func (s MCPServer) LogValue() slog.Value { return slog.StringValue(s.String()) }
