package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	cc "github.com/tetherhq/tether/protocol/claudecode"
	"github.com/tetherhq/tether/protocol/ndjson"
	"github.com/tetherhq/tether/transport"
)

// DefaultControlTimeout bounds each outbound control request.
const DefaultControlTimeout = 60 * time.Second

// Client is one live CLI session: many turns, one process. Its methods are
// safe for concurrent use; receive messages from one goroutine at a time.
type Client struct {
	opts Options
	conn transport.Conn

	ctx    context.Context // lives until Close; cancels reader and callbacks
	cancel context.CancelFunc
	// pushCtx ends queueing when Close starts, so the reader can drain
	// the CLI's last output instead of blocking on a departed consumer.
	pushCtx    context.Context
	stopPush   context.CancelFunc
	queue      *messageQueue
	readerDone chan struct{}
	dead       chan struct{} // closed when the CLI's output ended
	deadErr    error         // why; set before dead closes
	// exitErr is how the process ended when it ended abnormally, kept
	// even where deadErr is nil because a failed result said why: a
	// request still waiting (initialize) reports the status and stderr.
	exitErr error

	idMu    sync.Mutex
	ids     cc.RequestIDs
	pending sync.Map // request id → chan cc.ControlResponseBody

	inboundMu sync.Mutex
	inbound   map[string]context.CancelFunc
	handlers  sync.WaitGroup

	hooks hookRegistry
	mcp   *mcpBridge
	// serverInfo is the initialize response as the CLI sent it, decoded
	// when asked for: its commands, agents and models run to 10 KB of
	// JSON and twice that decoded, which an idle session would hold.
	serverInfo []byte

	state     sync.Mutex
	sessionID string
	totals    Totals
	liveTasks map[string]bool

	lastFailedResult atomic.Bool

	receiving atomic.Bool
	closeOnce sync.Once
}

// Totals accumulates a client's turns. CostUSD is the CLI's cumulative
// figure for this process; Usage sums each turn's usage.
type Totals struct {
	Results    int
	Turns      int
	CostUSD    float64
	Usage      Usage
	DurationMS int64
}

// Connect starts (or reaches) the CLI and completes the initialize
// handshake. ctx bounds the connection and the handshake.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	id := opts.pinSessionID()
	tr, err := opts.transport()
	if err != nil {
		return nil, err
	}
	conn, err := tr.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("claude: connect: %w", err)
	}
	if r, ok := conn.(interface{ SessionID() string }); ok && r.SessionID() != "" {
		id = r.SessionID() // a runner's ready frame names the session
	}
	c := newClient(opts, conn, id)
	if err := c.initialize(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// newClient starts reading conn; sessionID is the id known so far.
func newClient(opts Options, conn transport.Conn, sessionID string) *Client {
	c := &Client{
		opts:       opts,
		conn:       conn,
		sessionID:  sessionID,
		queue:      newMessageQueue(),
		readerDone: make(chan struct{}),
		dead:       make(chan struct{}),
		inbound:    map[string]context.CancelFunc{},
		hooks:      newHookRegistry(opts.Hooks),
		liveTasks:  map[string]bool{},
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.pushCtx, c.stopPush = context.WithCancel(c.ctx)
	c.mcp = newMCPBridge(c.ctx, opts.SDKMCPServers, opts.logger())
	go c.readLoop()
	return c
}

// transport returns the configured transport or a local process.
func (o *Options) transport() (transport.Transport, error) {
	if o.Transport != nil {
		return o.Transport, nil
	}
	if o.Runner != nil {
		return o.runnerTransport()
	}
	path, err := FindCLI(o.CLIPath)
	if err != nil {
		return nil, err
	}
	args, err := o.CommandArgs()
	if err != nil {
		return nil, err
	}
	return &transport.Command{
		Path: path, Args: args, Env: o.CommandEnv(), Dir: o.Cwd,
		Stderr: o.Stderr, MaxLineSize: o.MaxLineSize,
		ExitGrace: o.ShutdownGrace, Logger: o.Logger,
	}, nil
}

func (c *Client) initialize(ctx context.Context) error {
	req := cc.InitializeRequest{
		Hooks:         c.hooks.config,
		Agents:        c.opts.Agents,
		SDKMCPServers: c.opts.sdkServerNames(),
	}
	raw, err := c.control(ctx, req, c.initializeTimeout())
	if err != nil {
		return err
	}
	if len(raw) > 0 {
		var info ServerInfo
		if err := json.Unmarshal(raw, &info); err != nil {
			return fmt.Errorf("claude: initialize response: %w", err)
		}
		if !c.opts.DiscardServerInfo {
			c.serverInfo = bytes.Clone(raw)
		}
	}
	return nil
}

func (c *Client) initializeTimeout() time.Duration {
	if c.opts.InitializeTimeout > 0 {
		return c.opts.InitializeTimeout
	}
	d := 60 * time.Second
	if ms, err := strconv.Atoi(os.Getenv("CLAUDE_CODE_STREAM_CLOSE_TIMEOUT")); err == nil {
		if env := time.Duration(ms) * time.Millisecond; env > d {
			d = env
		}
	}
	return d
}

// readLoop is the only reader of the connection. It decodes each line as
// it reads it, while the line is still in this core's cache (handing it
// to the receiving goroutine to decode cost more than decoding it here),
// answers control traffic itself, and queues the rest (or hands it to
// Options.OnMessage).
func (c *Client) readLoop() {
	defer close(c.readerDone)
	for {
		line, err := c.conn.Read(c.ctx)
		if err != nil {
			if errors.Is(err, ndjson.ErrSkipped) {
				c.reportLineError(err)
				continue
			}
			c.finish(err)
			return
		}
		msg, err := decode(line)
		if err != nil {
			c.reportLineError(err)
			continue
		}
		if msg == nil || c.readerOwned(msg) {
			continue
		}
		c.noteResult(msg)
		if push := c.opts.OnMessage; push != nil {
			c.observe(msg)
			push(msg)
			continue
		}
		// After Close began nobody listens: drop, keep draining.
		_ = c.queue.push(c.pushCtx, queued{msg: msg, size: len(line)})
	}
}

// classify returns the line's type when it may matter to the reader, and
// "" for a line that goes to the consumer, sparing the reader a scan of
// most lines (Parse classifies those as it decodes). A line that starts
// as a conversation message yet is something else (a second "type" key)
// is found out by Parse and handled all the same (see readerOwned).
func classify(line []byte) string {
	if cc.ConversationType(line) != "" {
		return ""
	}
	return cc.PeekType(line)
}

func (c *Client) route(msg Message) {
	switch m := msg.(type) {
	case *cc.ControlResponse:
		if ch, ok := c.pending.LoadAndDelete(m.Response.RequestID); ok {
			ch.(chan cc.ControlResponseBody) <- m.Response
		}
	case *cc.ControlRequest:
		c.startInbound(m)
	case *cc.ControlCancelRequest:
		c.cancelInbound(m.RequestID)
	}
}

// noteResult remembers whether the last message was a failed result: the
// CLI exits 1 after one, which is then no error of its own.
func (c *Client) noteResult(msg Message) {
	r, ok := msg.(*ResultMessage)
	c.lastFailedResult.Store(ok && r.IsError)
}

func (c *Client) reportLineError(err error) {
	if c.opts.OnLineError != nil {
		c.opts.OnLineError(err)
		return
	}
	// A skipped line is lost output: without a handler or a logger of the
	// caller's, say so on the default logger rather than nowhere.
	logger := c.opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Warn("claude: skipped a line of CLI output", "err", err)
}

// finish records why the output ended and wakes everyone waiting on it.
func (c *Client) finish(err error) {
	var exit *transport.ExitError
	if errors.As(err, &exit) {
		c.exitErr = exit
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, transport.ErrClosed), errors.Is(err, context.Canceled):
		err = nil
	case errors.As(err, &exit) && c.lastFailedResult.Load():
		// The CLI exits 1 after an is_error result; the result says why.
		err = nil
	}
	c.deadErr = err
	close(c.dead)
	if push := c.opts.OnMessage; push != nil {
		push(nil)
	}
	if err != nil {
		_ = c.queue.push(c.pushCtx, queued{err: err})
	}
	c.queue.close()
}

// observe tracks session id, totals and background tasks, as messages
// are received.
func (c *Client) observe(msg Message) {
	c.state.Lock()
	defer c.state.Unlock()
	switch m := msg.(type) {
	case *SystemMessage:
		if m.SessionID != "" {
			c.sessionID = m.SessionID
		}
		c.trackTask(m)
	case *ResultMessage:
		if m.SessionID != "" {
			c.sessionID = m.SessionID
		}
		c.totals.Results++
		c.totals.Turns += m.NumTurns
		c.totals.Usage = c.totals.Usage.Add(m.Usage)
		c.totals.DurationMS += m.DurationMS
		if m.TotalCostUSD > c.totals.CostUSD {
			c.totals.CostUSD = m.TotalCostUSD
		}
	}
}

// trackTask follows delegated work that may still call back after a
// result (subagents, workflows): stdin must stay open for it.
func (c *Client) trackTask(m *SystemMessage) {
	switch m.Subtype {
	case cc.SystemTaskStarted:
		if m.TaskType == "local_agent" || m.TaskType == "local_workflow" {
			c.liveTasks[m.TaskID] = true
		}
	case cc.SystemTaskNotify:
		delete(c.liveTasks, m.TaskID)
	case cc.SystemTaskUpdated:
		if m.Status != nil && *m.Status != "running" && *m.Status != "pending" {
			delete(c.liveTasks, m.TaskID)
		}
	case cc.SystemBackgroundTasks:
		clear(c.liveTasks)
		for _, raw := range m.Tasks {
			var t struct {
				TaskID   string `json:"task_id"`
				TaskType string `json:"task_type"`
			}
			if json.Unmarshal(raw, &t) == nil && (t.TaskType == "local_agent" || t.TaskType == "local_workflow") {
				c.liveTasks[t.TaskID] = true
			}
		}
	}
}

// HasLiveTasks reports delegated work (subagents, workflows) still running
// after a result: it may call back, so stdin must stay open for it.
func (c *Client) HasLiveTasks() bool {
	c.state.Lock()
	defer c.state.Unlock()
	return len(c.liveTasks) > 0
}

// SessionID is the session's id, known when Connect returns: the id
// given (Options.SessionID), the one resumed (Options.Resume, unless
// ForkSession), the runner's, or one the SDK chose and passed to the CLI.
// Only with Options.Continue, ExtraArgs that pick the session, or a
// custom Transport is it empty until the first message that carries it.
func (c *Client) SessionID() string {
	c.state.Lock()
	defer c.state.Unlock()
	return c.sessionID
}

// Totals returns the usage and cost of the results received so far.
func (c *Client) Totals() Totals {
	c.state.Lock()
	defer c.state.Unlock()
	return c.totals
}

// ServerInfo is the CLI's answer to initialize (commands, models, …).
func (c *Client) ServerInfo() ServerInfo {
	var info ServerInfo
	if len(c.serverInfo) > 0 {
		_ = json.Unmarshal(c.serverInfo, &info) // checked at initialize
	}
	return info
}

// Done is closed when the CLI's output has ended.
func (c *Client) Done() <-chan struct{} { return c.dead }

// Err is why the output ended (nil for a clean end), once Done is closed.
func (c *Client) Err() error {
	select {
	case <-c.dead:
		return c.deadErr
	default:
		return nil
	}
}

// Close ends the session: stdin closes so the CLI can save its session and
// exit; after Options.ShutdownGrace it is signalled, then killed. Callbacks
// in flight are cancelled. Close waits for all of it.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.stopPush()
		_ = c.conn.Close()
		c.cancel()
		<-c.readerDone
		c.handlers.Wait()
		c.mcp.close()
	})
	return nil
}
