package claudecli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

var _ agent.NativeSession = (*canonicalSession)(nil)

// errRelayOnly is returned for calls that need a relay session.
var errRelayOnly = errors.New("claudecli: raw input needs a relay session (init with host_control)")

// native applies a native session's options as its client gave them
// (partial messages only when asked); the CLI decides its permissions
// itself, as it did before the runner had approvals of its own, since such
// a client has no way to answer them.
func (s *canonicalSession) native(opts *claude.Options) {
	host := opts.OnLineError
	opts.OnLineError = func(err error) {
		s.lineError(err)
		if host != nil {
			host(err)
		}
	}
}

// nativeLine hands the native client a line of the runner's own (its
// refusal of a client request), among the CLI's.
func (s *canonicalSession) nativeLine(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mapper != nil && !s.ended {
		s.out.Add(s.mapper.event(agent.KindNative, line))
	}
}

// promptInput is a prompt as the CLI takes it, and what it reads as: its
// native content (a string or content blocks) when it has one, else its
// text.
func promptInput(p agent.Prompt) (claude.UserInput, string, error) {
	if len(p.Native) == 0 {
		// Images first, then the text: the order Anthropic advises.
		content := make(cc.Content, 0, len(p.Images)+1)
		for _, img := range p.Images {
			content = append(content, cc.Base64Image(img.MediaType, img.Data))
		}
		return claude.UserInput{Content: append(content, cc.TextBlock{Text: p.Text})}, p.Text, nil
	}
	if len(p.Images) > 0 {
		return claude.UserInput{}, "", &agent.InvalidImageError{MediaType: p.Images[0].MediaType,
			Reason: "a native prompt carries its images in its own content"}
	}
	var content cc.Content
	if err := json.Unmarshal(p.Native, &content); err != nil {
		return claude.UserInput{}, "", fmt.Errorf("claudecli: prompt: %w", err)
	}
	text := p.Text
	if text == "" {
		text = contentText(content)
	}
	return claude.UserInput{Content: content}, text, nil
}

// contentText is what a message's text blocks say, one after another.
func contentText(c cc.Content) string {
	var b strings.Builder
	for _, block := range c {
		if t, ok := block.(cc.TextBlock); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// Control sends a control request of Claude Code's protocol: through the
// SDK, for a native client that leaves the protocol to the runner; a
// relay's client sends its own.
func (s *canonicalSession) Control(ctx context.Context, subtype string, params json.RawMessage) (json.RawMessage, error) {
	defer s.controlling()()
	return s.link.control(ctx, subtype, params)
}

// Input writes a relay client's line to the CLI, as relayLink.input
// allows it. A user line starts a turn, as a prompt does; an answer to a
// permission request is the client's resolution of that approval, which
// goes to the CLI only if it is the one that stands.
func (s *canonicalSession) Input(ctx context.Context, line []byte) error {
	if s.relay == nil {
		return errRelayOnly
	}
	msg, err := decodeLine(line)
	if err != nil {
		return fmt.Errorf("claudecli: input line: %w", err)
	}
	if typ, _ := msg["type"].(string); typ == cc.TypeUser {
		s.userLine(line)
	}
	return s.relay.input(ctx, msg, func(id string, _ pendingRequest, resp map[string]any) bool {
		return s.clientAnswered(ctx, id, resp)
	})
}

// userLine starts a turn for a relay client's own user line, unless one
// runs: the CLI queues the line, and its answer comes as a turn of its own.
func (s *canonicalSession) userLine(line []byte) {
	var user struct {
		Message cc.UserMessageParam `json:"message"`
	}
	_ = json.Unmarshal(line, &user)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn || s.ended {
		return
	}
	s.turn = true
	events := s.mapper.startTurn(contentText(user.Message.Content), "")
	s.record(events)
	s.out.Add(events...)
}

// relayedRequest maps a control request the CLI sends a relay's client: a
// permission request is an approval (the client may answer it, and so may
// the runner's other clients); anything else the client answers alone.
func (s *canonicalSession) relayedRequest(req *cc.ControlRequest) []agent.Event {
	if req.Subtype() != cc.SubtypeCanUseTool {
		return s.mapper.line(req)
	}
	var use cc.CanUseToolRequest
	if err := req.Decode(&use); err != nil {
		return s.mapper.line(req)
	}
	p := &pendingApproval{toolUseID: use.ToolUseID, tool: use.ToolName, relayed: true, answer: make(chan agent.Resolution, 1)}
	if asked, ok := s.relay.pendingInput(req.RequestID); ok {
		p.input = asked
	}
	e := s.mapper.approvalRequested(req.RequestID, &use, req.Raw())
	if use.ToolName == askTool {
		if q, ok := askQuestion(use.Input); ok {
			p.question = q
			e.Approval.Kind, e.Approval.Question, e.Approval.Title, e.Approval.Scopes = agent.ApprovalQuestion, q, q.Prompt, nil
		}
	}
	if p.question == nil {
		e.Approval.Scopes = []agent.Scope{agent.ScopeOnce, agent.ScopeSession}
	}
	s.pending[req.RequestID] = p
	return []agent.Event{e}
}

// relayedCancel is the CLI withdrawing a request (an interrupt): an
// approval it withdraws is settled as interrupted.
func (s *canonicalSession) relayedCancel(c *cc.ControlCancelRequest) []agent.Event {
	events := s.mapper.line(c)
	if p, ok := s.pending[c.RequestID]; ok && p.first == nil {
		r := agent.Resolution{Decision: agent.Deny, Reason: "the turn was interrupted", Cause: agent.CauseInterrupted}
		if s.settleLocked(c.RequestID, r) == nil {
			events = append(events, s.mapper.approvalResolved(p.toolUseID, p.tool, *p.first))
		}
	}
	return events
}

// clientAnswered is a relay client's answer to request id, on its way to
// the CLI: for an approval, the client's resolution, which goes on only if
// it stands (Claim decides; an answer that came first goes instead).
func (s *canonicalSession) clientAnswered(ctx context.Context, id string, resp map[string]any) bool {
	s.mu.Lock()
	p, ok := s.pending[id]
	s.mu.Unlock()
	if !ok {
		return true // a hook's or an MCP server's answer
	}
	r := clientResolution(id, resp)
	if s.claim != nil {
		won, err := s.claim(r)
		var already *agent.AlreadyResolvedError
		switch {
		case errors.As(err, &already):
			_ = s.Resolve(ctx, already.First) // another answer came first: it goes
			return false
		case err != nil:
			s.relay.log.Warn("claudecli: the client's answer could not be recorded", "approval", id, "err", err)
			return false
		}
		r = won
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settleLocked(id, r) != nil {
		return false // settled meanwhile
	}
	s.out.Add(s.mapper.approvalResolved(p.toolUseID, p.tool, *p.first))
	return true
}

// clientResolution reads a relay client's permission answer.
func clientResolution(id string, resp map[string]any) agent.Resolution {
	body, _ := resp["response"].(map[string]any)
	r := agent.Resolution{ApprovalID: id, Decision: agent.Allow, Cause: agent.CauseClient, By: nativeClient}
	if b, _ := body["behavior"].(string); b != "allow" || resp["subtype"] == "error" {
		r.Decision = agent.Deny
		r.Reason, _ = body["message"].(string)
	}
	return r
}

// nativeClient names who gave a relay client's answer.
const nativeClient = "native client"

// relayedAnswer is the CLI's answer to a relayed approval that a client
// of the runner gave (not the relay's own client), as the SDK would answer
// for the session; the approval.resolved event goes out with it. Call with
// mu held, after settleLocked; write the line after letting mu go (the
// CLI may be waiting for its output to be read).
func (s *canonicalSession) relayedAnswer(id string, p *pendingApproval) ([]byte, error) {
	r := *p.first
	resp := cc.PermissionResponse{Behavior: "deny", Message: r.Reason}
	if resp.Message == "" {
		resp.Message = "denied"
	}
	if r.Decision == agent.Allow {
		input := p.input
		if p.question != nil && len(r.Answers) > 0 {
			var err error
			if input, err = answeredInput(input, p.question, r.Answers); err != nil {
				return nil, err
			}
		}
		if len(r.Input) > 0 && p.question == nil {
			var err error
			if input, err = s.editedInput(p.tool, r.Input); err != nil {
				return nil, err
			}
		}
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		resp = cc.PermissionResponse{Behavior: "allow", UpdatedInput: input}
		if r.Scope == agent.ScopeSession {
			resp.UpdatedPermissions = []cc.PermissionUpdate{{Type: "addRules", Behavior: "allow",
				Destination: "session", Rules: []cc.PermissionRule{{ToolName: p.tool}}}}
		}
	}
	s.out.Add(s.mapper.approvalResolved(p.toolUseID, p.tool, r))
	s.relay.untrack(id)
	return cc.EncodeControlSuccess(id, resp)
}
