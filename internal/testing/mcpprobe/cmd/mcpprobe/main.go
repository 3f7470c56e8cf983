// Command mcpprobe is mcpprobe's MCP server over stdio: its marker file is
// $MCPPROBE_MARKER, its tag $MCPPROBE_TAG.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/internal/testing/mcpprobe"
)

func main() {
	marker := os.Getenv(mcpprobe.MarkerEnv)
	if marker == "" {
		fmt.Fprintln(os.Stderr, "mcpprobe: $"+mcpprobe.MarkerEnv+" names no marker file")
		os.Exit(2)
	}
	tag := os.Getenv(mcpprobe.TagEnv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := mcpprobe.NewServer(marker, func(*mcp.CallToolRequest) string { return tag })
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "mcpprobe:", err)
		os.Exit(1)
	}
}
