package mockclaude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

var (
	// errInterrupted is the cause of a turn stopped by an interrupt request.
	errInterrupted = errors.New("interrupted by the SDK")
	// errStreamClosed fails requests that can no longer be answered because
	// stdin ended; the real CLI says the same.
	errStreamClosed = errors.New("Stream closed")
)

// exitCode ends the process with that code when a scenario returns it.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// controlReply is the SDK's answer to one of the mock's own requests.
type controlReply struct {
	body json.RawMessage
	err  error
}

// sdkError is an error control_response from the SDK.
type sdkError struct{ msg string }

func (e *sdkError) Error() string { return e.msg }

// inbound is any stdin line.
type inbound struct {
	Type        string          `json:"type"`
	RequestID   string          `json:"request_id"`
	Request     json.RawMessage `json:"request"`
	Response    json.RawMessage `json:"response"`
	Message     json.RawMessage `json:"message"`
	ShouldQuery *bool           `json:"shouldQuery"`
}

func (s *session) handleLine(line []byte) {
	var m inbound
	if err := json.Unmarshal(line, &m); err != nil {
		s.notes.notef("ignoring stdin line that is not a JSON object (%v): %.80q", err, line)
		return
	}
	switch m.Type {
	case "control_request":
		s.handleControl(m.RequestID, m.Request)
	case "control_response":
		s.deliver(m.Response)
	case "control_cancel_request", "keep_alive", "update_environment_variables":
	case "user":
		if m.ShouldQuery != nil && !*m.ShouldQuery {
			return // appended to the conversation without a turn
		}
		s.enqueue(userTurn{prompt: promptText(m.Message)})
	default:
		s.notes.notef("ignoring stdin message of type %q", m.Type)
	}
}

// promptText joins the text of a user message (string or content blocks).
func promptText(raw json.RawMessage) string {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &msg) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(msg.Content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// handleControl answers an SDK→CLI control request.
func (s *session) handleControl(id string, raw json.RawMessage) {
	var req struct {
		Subtype   string  `json:"subtype"`
		Model     *string `json:"model"`
		Mode      string  `json:"mode"`
		DryRun    bool    `json:"dry_run"`
		MessageID string  `json:"user_message_id"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		s.respondError(id, "Invalid control request: "+err.Error())
		return
	}
	switch req.Subtype {
	case "initialize":
		if s.scen.ignoreInit {
			s.notes.notef("scenario ignores initialize (request %s)", id)
			return
		}
		var init initializeRequest
		if err := json.Unmarshal(raw, &init); err != nil {
			s.respondError(id, "Invalid initialize request: "+err.Error())
			return
		}
		s.mu.Lock()
		if s.initReq == nil { // idempotent: a repeat returns the first payload
			s.initReq = &init
		}
		resp := buildInitializeResponse(s.initReq)
		s.mu.Unlock()
		s.respond(id, resp)
	case "interrupt":
		s.respond(id, nil)
		s.interrupt()
	case "set_model":
		s.mu.Lock()
		s.model = DefaultModel
		if req.Model != nil && *req.Model != "" && *req.Model != "default" {
			s.model = *req.Model
		}
		s.mu.Unlock()
		s.respond(id, nil)
	case "set_permission_mode":
		if !validPermissionMode(req.Mode) {
			s.respondError(id, fmt.Sprintf("Invalid permission mode: %s", req.Mode))
			return
		}
		s.setPermissionMode(req.Mode)
		s.respond(id, map[string]string{"mode": req.Mode})
		s.send(systemStatus{Type: "system", Subtype: "status", PermissionMode: req.Mode, UUID: s.ids.uuid(), SessionID: s.sessionID})
	case "mcp_status":
		servers := []any{}
		for _, name := range s.sdkServers() {
			servers = append(servers, map[string]any{"name": name, "status": "connected", "config": map[string]string{"type": "sdk", "name": name}, "scope": "dynamic"})
		}
		s.respond(id, map[string]any{"mcpServers": servers})
	case "get_context_usage":
		s.mu.Lock()
		tokens := s.msgTokens
		s.mu.Unlock()
		s.respond(id, buildContextUsage(s.currentModel(), tokens))
	case "rewind_files":
		s.respond(id, s.rewindFiles(req.DryRun))
	case "set_max_thinking_tokens", "stop_task", "mcp_reconnect", "mcp_toggle", "end_session":
		s.respond(id, nil)
	default:
		s.respondError(id, "Unsupported control request subtype: "+req.Subtype)
	}
}

func validPermissionMode(m string) bool {
	switch m {
	case "default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto":
		return true
	}
	return false
}

func (s *session) setPermissionMode(m string) {
	s.mu.Lock()
	s.permMode = m
	s.mu.Unlock()
}

// rewindFiles reports (and unless dryRun, removes) the files the mock
// created in this process.
func (s *session) rewindFiles(dryRun bool) map[string]any {
	s.mu.Lock()
	files := append([]string(nil), s.created...)
	if !dryRun {
		s.created = nil
	}
	s.mu.Unlock()
	if !dryRun {
		for _, f := range files {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.notes.notef("rewind_files: %v", err)
			}
		}
	}
	return map[string]any{"canRewind": true, "filesChanged": append([]string{}, files...), "insertions": 0, "deletions": len(files)}
}

// send writes one stdout line, noting a failure on stderr; used where the
// caller (the stdin reader) has nobody to return an error to.
func (s *session) send(v any) {
	if err := s.out.send(v); err != nil && !errors.Is(err, errStopped) {
		s.notes.notef("writing stdout: %v", err)
	}
}

func (s *session) respond(id string, body any) {
	s.send(controlResponseMsg{Type: "control_response", Response: controlResponseBody{Subtype: "success", RequestID: id, Response: body}})
}

func (s *session) respondError(id, msg string) {
	s.send(controlResponseMsg{Type: "control_response", Response: controlResponseBody{Subtype: "error", RequestID: id, Error: msg}})
}

// deliver routes a control_response from the SDK to the request waiting
// for it.
func (s *session) deliver(raw json.RawMessage) {
	var resp struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		s.notes.notef("ignoring malformed control_response: %v", err)
		return
	}
	s.mu.Lock()
	ch, ok := s.pending[resp.RequestID]
	delete(s.pending, resp.RequestID)
	s.mu.Unlock()
	if !ok {
		s.notes.notef("ignoring control_response for unknown request %q", resp.RequestID)
		return
	}
	if resp.Subtype == "error" {
		msg := resp.Error
		if msg == "" {
			msg = "error response without a message"
		}
		ch <- controlReply{err: &sdkError{msg: msg}}
		return
	}
	ch <- controlReply{body: resp.Response}
}

// request sends a CLI→SDK control request and waits for the answer, stdin
// EOF (errStreamClosed) or the end of ctx. An abandoned request is
// withdrawn with control_cancel_request.
func (s *session) request(ctx context.Context, body any) (json.RawMessage, error) {
	id := s.ids.uuid()
	ch := make(chan controlReply, 1)
	s.mu.Lock()
	if s.eof {
		s.mu.Unlock()
		return nil, errStreamClosed
	}
	s.pending[id] = ch
	s.mu.Unlock()
	if err := s.out.send(controlRequestMsg{Type: "control_request", RequestID: id, Request: body}); err != nil {
		s.forget(id)
		return nil, err
	}
	select {
	case r := <-ch:
		return r.body, r.err
	case <-ctx.Done():
		if s.forget(id) {
			s.send(controlCancelMsg{Type: "control_cancel_request", RequestID: id})
		}
		return nil, context.Cause(ctx)
	}
}

func (s *session) forget(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pending[id]
	delete(s.pending, id)
	return ok
}
