// Package client is the Go client of a runner's sessions API (the /v1
// endpoints of `tether serve`): sessions of any agent kind, their
// canonical events as a stream that resumes by itself after a dropped
// connection, and their approvals. It speaks HTTP only and shares with the
// runner nothing but the canonical model (package agent).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
)

// Client talks to one runner.
type Client struct {
	// BaseURL is the runner's address: http://127.0.0.1:7420 (a ws:// or
	// wss:// URL of its /sessions endpoint is accepted too).
	BaseURL string
	Token   string
	// HTTP is the client requests go through; nil means one without a
	// total timeout (event streams are long), with Timeout per call below.
	HTTP *http.Client
	// Timeout bounds each call but event streams; zero means 30 s.
	Timeout time.Duration
	// Backoff is the first wait before an event stream reconnects (it
	// grows with each failure in a row); zero means 200 ms.
	Backoff time.Duration
}

// Session describes a session on the runner.
type Session struct {
	ID          string    `json:"id"`
	Agent       string    `json:"agent"`
	WorkspaceID string    `json:"workspace_id"`
	NativeID    string    `json:"native_id,omitempty"`
	State       string    `json:"state"` // idle, running, ended
	Created     time.Time `json:"created"`
	LastSeq     uint64    `json:"last_seq"`
	TurnID      string    `json:"turn_id,omitempty"` // the running turn's
	// Runner is the fleet runner the session lives on.
	Runner string `json:"runner,omitempty"`
	// Model and Mode are what the session was started with or last set
	// to (Configure); empty is the agent's default.
	Model string `json:"model,omitempty"`
	Mode  string `json:"mode,omitempty"`
}

// Runner is one runner of a fleet (GET /v1/runners).
type Runner struct {
	Name        string    `json:"name"`
	Addr        string    `json:"addr,omitempty"`
	Agents      []string  `json:"agents"`
	Sessions    int       `json:"sessions"`
	MaxSessions int       `json:"max_sessions,omitempty"`
	Load        float64   `json:"load"`
	State       string    `json:"state"` // active, draining, lost
	Heartbeat   time.Time `json:"heartbeat"`
}

// CreateRequest starts a session; Prompt, if set, starts its first turn.
type CreateRequest struct {
	Agent       string `json:"agent"`
	WorkspaceID string `json:"workspace_id"`
	Model       string `json:"model,omitempty"`
	// Mode is one of the agent's modes to start in.
	Mode   string `json:"mode,omitempty"`
	Resume string `json:"resume,omitempty"`
	Fork   bool   `json:"fork,omitempty"`
	// Prompt, when set, starts the first turn; Images go with it, for an
	// agent whose capabilities say images.
	Prompt string        `json:"prompt,omitempty"`
	Images []agent.Image `json:"images,omitempty"`
	// Runner, in a fleet, names the runner to start the session on.
	Runner string `json:"runner,omitempty"`
	// MCPServers are MCP servers the agent connects to, of the
	// transports its capabilities list (MCP).
	MCPServers []agent.MCPServer `json:"mcp_servers,omitempty"`
}

// Runners lists a fleet's runners.
func (c *Client) Runners(ctx context.Context) ([]Runner, error) {
	var out struct{ Runners []Runner }
	return out.Runners, c.do(ctx, "GET", "/v1/runners", nil, &out)
}

// Drain stops new placements on a fleet's runner (drain false lets them
// in again); its sessions go on.
func (c *Client) Drain(ctx context.Context, runner string, drain bool) error {
	return c.do(ctx, "POST", "/v1/runners/"+url.PathEscape(runner)+"/drain", map[string]bool{"drain": drain}, nil)
}

// Error is an error answer of the API. It matches the agent package's
// errors where one fits (errors.Is(err, agent.ErrTurnInProgress)).
type Error struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("runner: %s (%d): %s", e.Code, e.Status, e.Message)
}

func (e *Error) Is(target error) bool {
	switch e.Code {
	case "turn_in_progress":
		return target == agent.ErrTurnInProgress
	case "no_turn":
		return target == agent.ErrNoTurn
	case "approval_not_found":
		return target == agent.ErrUnknownApproval
	case "session_ended":
		return target == agent.ErrSessionEnded
	case "unsupported":
		return target == agent.ErrUnsupported
	case "invalid_settings":
		return target == agent.ErrInvalidSettings
	case "invalid_image":
		return target == agent.ErrInvalidImage
	case "session_not_found":
		return target == ErrNotFound
	case "unauthorized":
		return target == ErrUnauthorized
	}
	return false
}

var (
	// ErrNotFound matches an answer about a session the runner does not have.
	ErrNotFound = errors.New("client: no such session")
	// ErrUnauthorized: the runner refused the token.
	ErrUnauthorized = errors.New("client: the runner refused the token")
)

func (c *Client) base() string {
	b := strings.TrimSuffix(c.BaseURL, "/")
	b = strings.TrimSuffix(b, "/sessions")
	switch {
	case strings.HasPrefix(b, "ws://"):
		b = "http://" + strings.TrimPrefix(b, "ws://")
	case strings.HasPrefix(b, "wss://"):
		b = "https://" + strings.TrimPrefix(b, "wss://")
	}
	return b
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return 30 * time.Second
}

// do sends one call and decodes a 2xx answer into out; other answers are
// an *Error (a 409 about an approval carries the first resolution).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base()+path, body)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return answerError(resp.StatusCode, data)
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("client: %s %s: the answer does not decode: %w", method, path, err)
	}
	return nil
}

func answerError(status int, data []byte) error {
	var answer struct {
		Error      Error             `json:"error"`
		Resolution *agent.Resolution `json:"resolution"`
	}
	if json.Unmarshal(data, &answer) != nil || answer.Error.Code == "" {
		code := "http_error"
		if status == http.StatusUnauthorized {
			code = "unauthorized"
		}
		return &Error{Status: status, Code: code, Message: strings.TrimSpace(string(data))}
	}
	if answer.Error.Code == "already_resolved" && answer.Resolution != nil {
		return &agent.AlreadyResolvedError{First: *answer.Resolution}
	}
	answer.Error.Status = status
	return &answer.Error
}

// Agents lists the runner's agent kinds and what each can do.
func (c *Client) Agents(ctx context.Context) (map[string]agent.Capabilities, error) {
	var out struct{ Agents map[string]agent.Capabilities }
	return out.Agents, c.do(ctx, "GET", "/v1/agents", nil, &out)
}

// Sessions lists every session, oldest first.
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	var out struct{ Sessions []Session }
	return out.Sessions, c.do(ctx, "GET", "/v1/sessions", nil, &out)
}

// Create starts a session.
func (c *Client) Create(ctx context.Context, req CreateRequest) (Session, error) {
	var s Session
	return s, c.do(ctx, "POST", "/v1/sessions", req, &s)
}

// Get describes one session.
func (c *Client) Get(ctx context.Context, id string) (Session, error) {
	var s Session
	return s, c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(id), nil, &s)
}

// Prompt starts a turn.
func (c *Client) Prompt(ctx context.Context, id, text string) error {
	return c.PromptImages(ctx, id, text)
}

// promptBody is the sessions API's prompt: text, and images in base64.
type promptBody struct {
	Text   string        `json:"text"`
	Images []agent.Image `json:"images,omitempty"`
}

// PromptImages starts a turn whose prompt carries images with its text,
// for an agent whose capabilities say images. A bad image is an error
// matching agent.ErrInvalidImage (the API's invalid_image), an agent
// that takes none one matching agent.ErrUnsupported.
func (c *Client) PromptImages(ctx context.Context, id, text string, images ...agent.Image) error {
	return c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(id)+"/prompt", promptBody{Text: text, Images: images}, nil)
}

// Configure changes a running session's mode or model.
func (c *Client) Configure(ctx context.Context, id string, set agent.Settings) (Session, error) {
	var out Session
	return out, c.do(ctx, "PATCH", "/v1/sessions/"+url.PathEscape(id), set, &out)
}

// Interrupt stops the running turn.
func (c *Client) Interrupt(ctx context.Context, id string) error {
	return c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(id)+"/interrupt", nil, nil)
}

// Resume starts an ended session again under its id: its agent resumes
// the conversation, and its events go on from its last seq. In a fleet it
// takes over a session whose runner was lost.
func (c *Client) Resume(ctx context.Context, id string) (Session, error) {
	var out Session
	err := c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(id)+"/resume", nil, &out)
	return out, err
}

// ResumeWithMCP is Resume with servers in place of the session's MCP
// servers (an empty list removes them).
func (c *Client) ResumeWithMCP(ctx context.Context, id string, servers []agent.MCPServer) (Session, error) {
	var out Session
	body := map[string][]agent.MCPServer{"mcp_servers": servers}
	if servers == nil {
		body["mcp_servers"] = []agent.MCPServer{}
	}
	err := c.do(ctx, "POST", "/v1/sessions/"+url.PathEscape(id)+"/resume", body, &out)
	return out, err
}

// Close ends a session.
func (c *Client) Close(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v1/sessions/"+url.PathEscape(id), nil, nil)
}

// Messages is the conversation so far, as completed items.
func (c *Client) Messages(ctx context.Context, id string) ([]agent.Item, error) {
	var out struct{ Items []agent.Item }
	return out.Items, c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(id)+"/messages", nil, &out)
}

// Diff is what the session changed in its workspace.
func (c *Client) Diff(ctx context.Context, id string) ([]agent.FileChange, error) {
	var out struct{ Changes []agent.FileChange }
	return out.Changes, c.do(ctx, "GET", "/v1/sessions/"+url.PathEscape(id)+"/diff", nil, &out)
}

// Approvals lists the approvals waiting for a decision, across sessions.
func (c *Client) Approvals(ctx context.Context) ([]agent.Approval, error) {
	var out struct{ Approvals []agent.Approval }
	return out.Approvals, c.do(ctx, "GET", "/v1/approvals", nil, &out)
}

// Answer is a decision for Resolve.
type Answer struct {
	Decision agent.Decision `json:"decision"`
	Scope    agent.Scope    `json:"scope,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Answers  []string       `json:"answers,omitempty"`
	// Input is an allow's edit of the call's input, for agents whose
	// capabilities say edit_input: the call runs with it.
	Input json.RawMessage `json:"input,omitempty"`
}

// Resolve answers an approval. If another answer came first, the error is
// an *agent.AlreadyResolvedError carrying it.
func (c *Client) Resolve(ctx context.Context, sessionID, approvalID string, a Answer) (agent.Resolution, error) {
	var r agent.Resolution
	path := "/v1/sessions/" + url.PathEscape(sessionID) + "/approvals/" + url.PathEscape(approvalID) + "/resolve"
	return r, c.do(ctx, "POST", path, a, &r)
}
