package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// control sends one request and waits for its answer, the timeout, ctx, or
// the end of the CLI's output — whichever comes first.
func (c *Client) control(ctx context.Context, req cc.OutboundRequest, timeout time.Duration) (json.RawMessage, error) {
	c.idMu.Lock()
	id := c.ids.Next()
	c.idMu.Unlock()
	line, err := cc.EncodeControlRequest(id, req)
	if err != nil {
		return nil, err
	}
	answer := make(chan cc.ControlResponseBody, 1)
	c.pending.Store(id, answer)
	defer c.pending.Delete(id)
	defer c.queue.holdOpen()()
	if err := c.conn.Write(ctx, line); err != nil {
		return nil, fmt.Errorf("claude: send %s: %w", req.Subtype(), c.writeErr(err))
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-answer:
		if r.Subtype == "error" {
			return nil, &ControlError{Subtype: req.Subtype(), Message: r.Error, Code: r.ErrorCode}
		}
		return r.Response, nil
	case <-c.dead:
		return nil, c.exitedDuring(req.Subtype())
	case <-timer.C:
		return nil, &ControlTimeoutError{Subtype: req.Subtype(), Timeout: timeout}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// exitedDuring is the error of a request the CLI ended before answering:
// it matches ErrProcessExited and carries why (the *ProcessError with
// exit status and stderr tail), said once, with one "claude:" prefix.
func (c *Client) exitedDuring(subtype string) error {
	cause := c.deadErr
	if cause == nil {
		cause = c.exitErr
	}
	return &RequestEndedError{Subtype: subtype, Cause: cause}
}

// RequestEndedError is a control request (initialize, say) whose answer
// never came because the CLI's output ended: Cause is why (a
// *ProcessError with the exit status and the last stderr lines), or nil
// for a CLI that exited 0. It matches ErrProcessExited.
type RequestEndedError struct {
	Subtype string
	Cause   error
}

func (e *RequestEndedError) Error() string {
	if e.Cause == nil {
		return fmt.Sprintf("claude: %s: the CLI process ended before answering", e.Subtype)
	}
	return fmt.Sprintf("claude: %s: %s", e.Subtype, strings.TrimPrefix(e.Cause.Error(), "claude: "))
}

func (e *RequestEndedError) Is(target error) bool { return target == ErrProcessExited }
func (e *RequestEndedError) Unwrap() error        { return e.Cause }

// writeErr prefers the reason the CLI went away over a bare pipe error.
func (c *Client) writeErr(err error) error {
	select {
	case <-c.dead:
		if c.deadErr != nil {
			return fmt.Errorf("%w: %w", ErrProcessExited, c.deadErr)
		}
		return ErrProcessExited
	default:
		return err
	}
}

func (c *Client) timeout() time.Duration {
	if c.opts.ControlTimeout > 0 {
		return c.opts.ControlTimeout
	}
	return DefaultControlTimeout
}

// Control sends any control request and returns the raw answer; the typed
// methods below cover the common ones.
func (c *Client) Control(ctx context.Context, req cc.OutboundRequest) (json.RawMessage, error) {
	return c.control(ctx, req, c.timeout())
}

func (c *Client) controlInto(ctx context.Context, req cc.OutboundRequest, out any) error {
	raw, err := c.Control(ctx, req)
	if err != nil || out == nil || len(raw) == 0 {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("claude: %s response: %w", req.Subtype(), err)
	}
	return nil
}

// Interrupt stops the turn in progress; its result arrives as usual.
func (c *Client) Interrupt(ctx context.Context) error {
	return c.controlInto(ctx, cc.InterruptRequest{}, nil)
}

// SetModel switches the model for the next turns; "" restores the default.
func (c *Client) SetModel(ctx context.Context, model string) error {
	req := cc.SetModelRequest{}
	if model != "" {
		req.Model = &model
	}
	return c.controlInto(ctx, req, nil)
}

// SetPermissionMode switches the permission mode.
func (c *Client) SetPermissionMode(ctx context.Context, mode PermissionMode) error {
	return c.controlInto(ctx, cc.SetPermissionModeRequest{Mode: string(mode)}, nil)
}

// SetMaxThinkingTokens sets the thinking budget; nil clears it.
func (c *Client) SetMaxThinkingTokens(ctx context.Context, tokens *int) error {
	return c.controlInto(ctx, cc.SetMaxThinkingTokensRequest{MaxThinkingTokens: tokens}, nil)
}

// MCPStatus reports every MCP server the session knows.
func (c *Client) MCPStatus(ctx context.Context) ([]MCPServerStatus, error) {
	var out cc.MCPStatusResponse
	err := c.controlInto(ctx, cc.MCPStatusRequest{}, &out)
	return out.MCPServers, err
}

// ReconnectMCPServer reconnects one MCP server.
func (c *Client) ReconnectMCPServer(ctx context.Context, name string) error {
	return c.controlInto(ctx, cc.MCPReconnectRequest{ServerName: name}, nil)
}

// ToggleMCPServer enables or disables one MCP server.
func (c *Client) ToggleMCPServer(ctx context.Context, name string, enabled bool) error {
	return c.controlInto(ctx, cc.MCPToggleRequest{ServerName: name, Enabled: enabled}, nil)
}

// SetMCPServers replaces the dynamically added MCP servers.
func (c *Client) SetMCPServers(ctx context.Context, servers map[string]json.RawMessage) (json.RawMessage, error) {
	return c.Control(ctx, cc.MCPSetServersRequest{Servers: servers})
}

// RewindFiles restores files to their state at a user message; it needs
// Options.EnableFileCheckpointing.
func (c *Client) RewindFiles(ctx context.Context, userMessageID string, dryRun bool) (RewindResult, error) {
	var out RewindResult
	err := c.controlInto(ctx, cc.RewindFilesRequest{UserMessageID: userMessageID, DryRun: dryRun}, &out)
	return out, err
}

// StopTask stops a background task.
func (c *Client) StopTask(ctx context.Context, taskID string) error {
	return c.controlInto(ctx, cc.StopTaskRequest{TaskID: taskID}, nil)
}

// ContextUsage returns the context window breakdown as the CLI reports it.
func (c *Client) ContextUsage(ctx context.Context) (json.RawMessage, error) {
	return c.Control(ctx, cc.GetContextUsageRequest{})
}
