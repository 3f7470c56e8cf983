package acp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
)

// Config is what Serve needs.
type Config struct {
	// Agent is the agent kind every session of this front end runs.
	Agent string
	// Open opens the core of a workspaces root (see Opener).
	Open Opener
	// Capabilities are the agent's (its driver's, or its runner's).
	Capabilities agent.Capabilities
	// Version is tether's, for initialize's agentInfo.
	Version string
	// Logger gets the front end's logs (stderr: stdout is the wire's).
	Logger *slog.Logger
}

// ErrConfig matches a Config that Serve cannot work with.
var ErrConfig = errors.New("acp: bad configuration")

// Serve speaks ACP on in and out until in ends or ctx is done. Nothing
// but JSON-RPC is written to out.
func Serve(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	if cfg.Agent == "" || cfg.Open == nil {
		return errors.Join(ErrConfig, errors.New("acp: Agent and Open are required"))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go guardFrames(in, pw, w, func(err error) { cfg.Logger.Warn("acp: frame refused", "err", err) })
	f := newFront(ctx, cfg)
	conn := acpsdk.NewAgentSideConnection(f, w, pr)
	conn.SetLogger(cfg.Logger)
	f.conn = conn
	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	cancel()
	_ = pr.Close()
	f.mu.Lock()
	f.closed = true // no turn starts after this: wait may begin
	f.mu.Unlock()
	f.wait()
	return nil
}

// front is the ACP agent a connection talks to: one editor's.
type front struct {
	ctx  context.Context
	cfg  Config
	conn *acpsdk.AgentSideConnection

	mu sync.Mutex
	// cores are the cores of the roots opened, roots their order, rootOf
	// the root of each session seen (roots.go).
	cores  map[string]Core
	roots  []string
	rootOf map[string]string
	// turns are the running prompts, by session.
	turns  map[string]*turn
	closed bool
	wg     sync.WaitGroup
}

func newFront(ctx context.Context, cfg Config) *front {
	return &front{ctx: ctx, cfg: cfg, turns: map[string]*turn{}, cores: map[string]Core{}, rootOf: map[string]string{}}
}

func (f *front) wait() { f.wg.Wait() }
