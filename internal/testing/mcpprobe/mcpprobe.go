// Package mcpprobe is an MCP server for tests: one tool, mark, which
// appends its token to a marker file and answers with the token and a tag
// its client configured (an environment variable for the stdio program, a
// header over HTTP). A test that finds the token in the file knows the
// agent ran the tool; one that finds the answer in the model's next
// request knows its result reached the model; the tag shows the server's
// env or headers reached it.
//
// The stdio server is the program in cmd/mcpprobe (Build compiles it);
// HTTP serves the same tool over streamable HTTP or SSE on loopback.
package mcpprobe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// Tool is the server's one tool.
	Tool = "mark"
	// MarkerEnv names the marker file the stdio program appends to.
	MarkerEnv = "MCPPROBE_MARKER"
	// TagEnv is the stdio program's tag; TagHeader the HTTP server's.
	TagEnv    = "MCPPROBE_TAG"
	TagHeader = "X-Probe-Tag"
)

// MarkArgs are the tool's arguments.
type MarkArgs struct {
	Token string `json:"token" jsonschema:"the token to record"`
}

// Answer is what the tool answers for token and tag.
func Answer(token, tag string) string { return fmt.Sprintf("marked %s tag %s", token, tag) }

// NewServer is the MCP server: mark appends to marker and answers with
// the token and tag(), read at each call.
func NewServer(marker string, tag func(*mcp.CallToolRequest) string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpprobe", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: Tool, Description: "Record a token and answer with it"},
		func(_ context.Context, req *mcp.CallToolRequest, in MarkArgs) (*mcp.CallToolResult, any, error) {
			if in.Token == "" || strings.ContainsAny(in.Token, "\r\n") {
				return nil, nil, fmt.Errorf("mcpprobe: a token of one line is needed")
			}
			f, err := os.OpenFile(marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return nil, nil, err
			}
			_, err = fmt.Fprintln(f, in.Token)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: Answer(in.Token, tag(req))}}}, nil, nil
		})
	return s
}

// Build compiles the stdio program into a temporary directory of t and
// returns its path.
func Build(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcpprobe")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", path, "github.com/tetherhq/tether/internal/testing/mcpprobe/cmd/mcpprobe").CombinedOutput()
	if err != nil {
		t.Fatalf("build mcpprobe: %v\n%s", err, out)
	}
	return path
}

// HTTP serves the server on loopback until the test ends, over streamable
// HTTP at /mcp and SSE at /sse; the tag is the request's TagHeader.
func HTTP(t testing.TB, marker string) (streamable, sse string) {
	t.Helper()
	tag := func(r *http.Request) string { return r.Header.Get(TagHeader) }
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return NewServer(marker, func(*mcp.CallToolRequest) string { return tag(r) })
	}, &mcp.StreamableHTTPOptions{Stateless: true}))
	mux.Handle("/sse", mcp.NewSSEHandler(func(r *http.Request) *mcp.Server {
		return NewServer(marker, func(*mcp.CallToolRequest) string { return tag(r) })
	}, nil))
	srv := httptest.NewServer(mux)
	// An agent that outlives the test's other cleanups may hold a stream
	// open, which Close would wait for.
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL + "/mcp", srv.URL + "/sse"
}

// Marks is what the marker file holds: the tokens the tool was called
// with, one a line (none when it does not exist).
func Marks(t testing.TB, marker string) []string {
	t.Helper()
	b, err := os.ReadFile(marker)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}
