package mcpprobe_test

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/internal/testing/mcpprobe"
)

// call calls mark with token over transport and returns its answer.
func call(t *testing.T, transport mcp.Transport, token string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpprobe.Tool, Arguments: map[string]any{"token": token}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("call: %v %+v", err, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

type tagged struct{ base http.RoundTripper }

func (t tagged) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(mcpprobe.TagHeader, "h1")
	return t.base.RoundTrip(r)
}

func TestProbe(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marks")
	cmd := exec.Command(mcpprobe.Build(t))
	cmd.Env = []string{mcpprobe.MarkerEnv + "=" + marker, mcpprobe.TagEnv + "=e1"}
	if got := call(t, &mcp.CommandTransport{Command: cmd}, "s1"); got != mcpprobe.Answer("s1", "e1") {
		t.Errorf("stdio answer %q", got)
	}
	streamable, sse := mcpprobe.HTTP(t, marker)
	hc := &http.Client{Transport: tagged{http.DefaultTransport}}
	if got := call(t, &mcp.StreamableClientTransport{Endpoint: streamable, HTTPClient: hc}, "h1tok"); got != mcpprobe.Answer("h1tok", "h1") {
		t.Errorf("streamable answer %q", got)
	}
	if got := call(t, &mcp.SSEClientTransport{Endpoint: sse, HTTPClient: hc}, "s2tok"); got != mcpprobe.Answer("s2tok", "h1") {
		t.Errorf("sse answer %q", got)
	}
	if got := mcpprobe.Marks(t, marker); !slices.Equal(got, []string{"s1", "h1tok", "s2tok"}) {
		t.Errorf("marks %v", got)
	}
}
