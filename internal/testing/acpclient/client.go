// Package acpclient is an ACP client for tests, on the ACP Go SDK: it
// starts an agent command (tether acp) as an editor does, records the
// session/update notifications it gets, and answers permission requests
// with the option kind a test chooses.
package acpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Client is one agent process and the connection to it.
type Client struct {
	*acp.ClientSideConnection
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	Stderr *syncBuffer
	// CanLoad is whether the agent declared loadSession, and TakesImages
	// whether it declared promptCapabilities.image (set by whoever shook
	// hands).
	CanLoad     bool
	TakesImages bool

	mu      sync.Mutex
	updates []acp.SessionNotification
	notify  chan struct{}
	// answer picks the permission option kind to answer with; "" answers
	// cancelled.
	answer acp.PermissionOptionKind
	asked  []acp.RequestPermissionRequest

	stopOnce sync.Once
	stopErr  error
}

// Start runs name with args (and env appended to its environment) in
// dir; the test's end closes its stdin and waits for it.
func Start(t testing.TB, dir string, env []string, name string, args ...string) *Client {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{cmd: cmd, stdin: stdin, Stderr: &syncBuffer{}, notify: make(chan struct{}, 1), answer: acp.PermissionOptionKindAllowOnce}
	cmd.Stderr = c.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.ClientSideConnection = acp.NewClientSideConnection(c, stdin, stdout)
	c.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		if err := c.Stop(20 * time.Second); err != nil {
			t.Errorf("agent: %v\nstderr:\n%s", err, c.Stderr.String())
		}
	})
	return c
}

// Stop closes the agent's stdin and waits for it to exit, killing it
// after limit.
func (c *Client) Stop(limit time.Duration) error {
	c.stopOnce.Do(func() { c.stopErr = c.stop(limit) })
	return c.stopErr
}

func (c *Client) stop(limit time.Duration) error {
	_ = c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		_ = c.cmd.Process.Kill()
		<-done
		return errors.New("the agent did not exit when its stdin closed")
	}
}

// Answer sets the option kind later permission requests are answered
// with ("" answers them cancelled).
func (c *Client) Answer(kind acp.PermissionOptionKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answer = kind
}

// Asked are the permission requests so far.
func (c *Client) Asked() []acp.RequestPermissionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.RequestPermissionRequest(nil), c.asked...)
}

// Updates are the notifications so far.
func (c *Client) Updates() []acp.SessionNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.SessionNotification(nil), c.updates...)
}

// Reset forgets the notifications and requests so far.
func (c *Client) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates, c.asked = nil, nil
}

// WaitUpdate waits until an update satisfies ok, or ctx ends.
func (c *Client) WaitUpdate(ctx context.Context, ok func(acp.SessionUpdate) bool) error {
	for {
		for _, n := range c.Updates() {
			if ok(n.Update) {
				return nil
			}
		}
		select {
		case <-c.notify:
		case <-ctx.Done():
			return fmt.Errorf("no such update: %w", ctx.Err())
		}
	}
}

func (c *Client) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, p)
	kind := c.answer
	c.mu.Unlock()
	for _, o := range p.Options {
		if o.Kind == kind {
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
				Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId, Outcome: "selected"}}}, nil
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
		Cancelled: &acp.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}, nil
}

func (c *Client) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
	return nil
}

var errNotOffered = errors.New("acpclient: this client offers no file system or terminal")

func (c *Client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errNotOffered
}
func (c *Client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errNotOffered
}
func (c *Client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errNotOffered
}
func (c *Client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errNotOffered
}
func (c *Client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errNotOffered
}
func (c *Client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errNotOffered
}
func (c *Client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errNotOffered
}

// syncBuffer is a bytes buffer safe for a process's writes and a
// test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
