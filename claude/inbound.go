package claude

import (
	"context"
	"errors"
	"fmt"

	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// errNoHandler answers requests this client was not set up for.
var errNoHandler = errors.New("no handler configured")

// startInbound runs a CLI request in its own goroutine with a context that
// a control_cancel_request (or Close) cancels. It is always answered,
// unless cancelled.
func (c *Client) startInbound(req *cc.ControlRequest) {
	ctx, cancel := context.WithCancel(c.ctx)
	c.inboundMu.Lock()
	c.inbound[req.RequestID] = cancel
	c.inboundMu.Unlock()
	c.handlers.Add(1)
	go func() {
		defer c.handlers.Done()
		defer c.cancelInbound(req.RequestID)
		payload, err := c.dispatchSafely(ctx, req)
		if ctx.Err() != nil {
			return // cancelled: the CLI expects no answer
		}
		var line []byte
		if err != nil {
			line, err = cc.EncodeControlError(req.RequestID, err.Error())
		} else {
			line, err = cc.EncodeControlSuccess(req.RequestID, payload)
		}
		if err == nil {
			err = c.conn.Write(ctx, line)
		}
		if err != nil {
			c.opts.logger().Warn("claude: could not answer control request", "subtype", req.Subtype(), "err", err)
		}
	}()
}

func (c *Client) cancelInbound(id string) {
	c.inboundMu.Lock()
	cancel, ok := c.inbound[id]
	delete(c.inbound, id)
	c.inboundMu.Unlock()
	if ok {
		cancel()
	}
}

// dispatchSafely turns a panicking callback into an error answer.
func (c *Client) dispatchSafely(ctx context.Context, req *cc.ControlRequest) (payload any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s callback panicked: %v", req.Subtype(), p)
		}
	}()
	return c.dispatch(ctx, req)
}

func (c *Client) dispatch(ctx context.Context, req *cc.ControlRequest) (any, error) {
	switch req.Subtype() {
	case cc.SubtypeCanUseTool:
		return c.canUseTool(ctx, req)
	case cc.SubtypeHookCallback:
		return c.hookCallback(ctx, req)
	case cc.SubtypeMCPMessage:
		var m cc.MCPMessageRequest
		if err := req.Decode(&m); err != nil {
			return nil, err
		}
		resp, err := c.mcp.handle(ctx, m.ServerName, m.Message)
		if err != nil {
			return nil, err
		}
		return cc.MCPMessageResponse{MCPResponse: resp}, nil
	default:
		return nil, fmt.Errorf("unsupported control request subtype: %s", req.Subtype())
	}
}

func (c *Client) canUseTool(ctx context.Context, req *cc.ControlRequest) (any, error) {
	if c.opts.CanUseTool == nil {
		return nil, fmt.Errorf("can_use_tool: %w", errNoHandler)
	}
	var r cc.CanUseToolRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	result, err := c.opts.CanUseTool(ctx, permissionRequestFrom(r))
	if err != nil {
		return nil, err
	}
	if result == nil {
		result = Deny{Message: "no decision"}
	}
	return result.response(r.Input), nil
}

func (c *Client) hookCallback(ctx context.Context, req *cc.ControlRequest) (any, error) {
	var r cc.HookCallbackRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	fn, ok := c.hooks.byID[r.CallbackID]
	if !ok {
		return nil, fmt.Errorf("hook callback %q: %w", r.CallbackID, errNoHandler)
	}
	in, err := cc.ParseHookInput(r.Input)
	if err != nil {
		return nil, fmt.Errorf("hook input: %w", err)
	}
	return fn(ctx, in)
}
