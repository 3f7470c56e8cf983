package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpBridge routes the CLI's mcp_message requests to in-process MCP servers
// built with the official go-sdk. Each server gets one session over a
// channel-backed mcp.Connection; responses are matched to requests by id.
type mcpBridge struct {
	servers map[string]*bridgeServer
	logger  *slog.Logger
}

type bridgeServer struct {
	conn    *bridgeConn
	session *mcp.ServerSession
	err     error

	mu      sync.Mutex
	waiters map[any]chan *jsonrpc.Response
}

func newMCPBridge(ctx context.Context, servers map[string]*mcp.Server, logger *slog.Logger) *mcpBridge {
	b := &mcpBridge{servers: map[string]*bridgeServer{}, logger: logger}
	for name, srv := range servers {
		bs := &bridgeServer{conn: newBridgeConn(), waiters: map[any]chan *jsonrpc.Response{}}
		bs.conn.onWrite = bs.deliver
		bs.session, bs.err = srv.Connect(ctx, bs.conn, nil)
		if bs.err != nil {
			logger.Warn("claude: in-process MCP server failed to start", "server", name, "err", bs.err)
		}
		b.servers[name] = bs
	}
	return b
}

// handle passes one JSON-RPC message to a server and returns what the CLI
// gets back: the response for a request, an acknowledgement otherwise.
func (b *mcpBridge) handle(ctx context.Context, server string, raw json.RawMessage) (json.RawMessage, error) {
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		return rpcError(jsonrpc.ID{}, jsonrpc.CodeParseError, "invalid JSON-RPC message: "+err.Error())
	}
	req, isReq := msg.(*jsonrpc.Request)
	bs, ok := b.servers[server]
	if !ok || bs.err != nil {
		id := jsonrpc.ID{}
		if isReq {
			id = req.ID
		}
		return rpcError(id, jsonrpc.CodeMethodNotFound, fmt.Sprintf("no in-process MCP server named %q", server))
	}
	if !isReq || !req.ID.IsValid() {
		if err := bs.conn.push(ctx, msg); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"jsonrpc":"2.0","result":{},"id":0}`), nil
	}
	wait := make(chan *jsonrpc.Response, 1)
	bs.mu.Lock()
	bs.waiters[req.ID.Raw()] = wait
	bs.mu.Unlock()
	defer func() {
		bs.mu.Lock()
		delete(bs.waiters, req.ID.Raw())
		bs.mu.Unlock()
	}()
	if err := bs.conn.push(ctx, req); err != nil {
		return nil, err
	}
	select {
	case resp := <-wait:
		return jsonrpc.EncodeMessage(resp)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-bs.conn.closed:
		return rpcError(req.ID, jsonrpc.CodeInternalError, "MCP server session ended")
	}
}

// deliver receives what the server writes: responses go to their waiter;
// server-initiated requests and notifications are not forwarded.
func (bs *bridgeServer) deliver(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	bs.mu.Lock()
	wait, ok := bs.waiters[resp.ID.Raw()]
	bs.mu.Unlock()
	if ok {
		wait <- resp
	}
}

func (b *mcpBridge) close() {
	for _, bs := range b.servers {
		_ = bs.conn.Close()
		if bs.session != nil {
			_ = bs.session.Wait()
		}
	}
}

func rpcError(id jsonrpc.ID, code int64, message string) (json.RawMessage, error) {
	return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: message}})
}

// bridgeConn is the server's side of the bridge, as an mcp.Transport and
// mcp.Connection at once.
type bridgeConn struct {
	in      chan jsonrpc.Message
	closed  chan struct{}
	once    sync.Once
	onWrite func(jsonrpc.Message)
}

var errBridgeClosed = errors.New("claude: MCP bridge closed")

func newBridgeConn() *bridgeConn {
	return &bridgeConn{in: make(chan jsonrpc.Message), closed: make(chan struct{})}
}

func (c *bridgeConn) Connect(context.Context) (mcp.Connection, error) { return c, nil }

func (c *bridgeConn) push(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case c.in <- msg:
		return nil
	case <-c.closed:
		return errBridgeClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *bridgeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.closed:
		return nil, errBridgeClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *bridgeConn) Write(_ context.Context, msg jsonrpc.Message) error {
	select {
	case <-c.closed:
		return errBridgeClosed
	default:
	}
	c.onWrite(msg)
	return nil
}

func (c *bridgeConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *bridgeConn) SessionID() string { return "" }
