package runnertest

import (
	"context"
	"slices"
	"sync"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
)

// MCPRecorder is the mock as an agent that takes MCP servers of the
// transports Takes: it records the servers each start was given, and
// starts the mock without them.
type MCPRecorder struct {
	agent.Driver
	Takes []agent.MCPTransport

	mu     sync.Mutex
	starts [][]agent.MCPServer
}

// NewMCPRecorder is an MCPRecorder over a new mock.
func NewMCPRecorder(takes ...agent.MCPTransport) *MCPRecorder {
	return &MCPRecorder{Driver: mock.New(mock.Config{}), Takes: takes}
}

// Capabilities are the mock's, with Takes.
func (d *MCPRecorder) Capabilities() agent.Capabilities {
	c := d.Driver.Capabilities()
	c.MCP = slices.Clone(d.Takes)
	return c
}

// Start checks and records req's servers, and starts the mock.
func (d *MCPRecorder) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	if err := agent.CheckMCPServers("mcp-recorder", d.Takes, req.MCPServers); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.starts = append(d.starts, slices.Clone(req.MCPServers))
	d.mu.Unlock()
	req.MCPServers = nil
	return d.Driver.Start(ctx, req)
}

// Starts are the servers each start was given, in order.
func (d *MCPRecorder) Starts() [][]agent.MCPServer {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.starts)
}
