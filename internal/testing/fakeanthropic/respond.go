package fakeanthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// Wire shapes of the Messages API responses the fake sends.
type (
	message struct {
		ID           string  `json:"id"`
		Type         string  `json:"type"`
		Role         string  `json:"role"`
		Model        string  `json:"model"`
		Content      []block `json:"content"`
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
		Usage        usage   `json:"usage"`
	}
	usage struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	}
	textJSON struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	toolUseJSON struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	apiError struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id,omitempty"`
	}
)

func (b block) MarshalJSON() ([]byte, error) {
	if b.kind == "tool_use" {
		return json.Marshal(toolUseJSON{Type: b.kind, ID: b.id, Name: b.name, Input: b.input})
	}
	return json.Marshal(textJSON{Type: b.kind, Text: b.text})
}

// started is the block as content_block_start announces it: empty, with
// its content to follow in deltas.
func (b block) started() block {
	b.text, b.input = "", json.RawMessage(`{}`)
	return b
}

// tokens estimates tokens the way the real API roughly counts: ~4 bytes each.
func tokens(n int) int {
	return max(1, n/4)
}

func (r reply) outputTokens() int {
	n := 0
	for _, b := range r.blocks {
		n += len(b.text) + len(b.input)
	}
	return tokens(n)
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeBodyError(w, err)
		return
	}
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("fake: body is not a Messages request: %v", err))
		return
	}
	rep := decide(&req, s.opts, func() string { return "toolu_fake_" + strconv.FormatInt(s.toolSeq.Add(1), 10) })
	if rep.status != http.StatusOK {
		writeError(w, rep.status, rep.errType, "fake "+rep.errType)
		return
	}
	msg := s.newMessage(req.Model, len(body), rep)
	w.Header().Set("Request-Id", "req_"+msg.ID)
	if !req.Stream {
		if err := jsonReply(r.Context(), w, msg, rep); err != nil {
			s.opts.Logger.Debug("fakeanthropic reply cut short", "id", msg.ID, "err", err)
		}
		return
	}
	if err := streamReply(r.Context(), w, msg, rep); err != nil {
		s.opts.Logger.Debug("fakeanthropic stream cut short", "id", msg.ID, "err", err)
		// Returning would let net/http end the chunked body cleanly, and a
		// stream cut off by Close must not look complete to the client.
		panic(http.ErrAbortHandler)
	}
}

// newMessage starts the reply message: a fresh id, the request's model
// echoed, and token counts estimated from the sizes involved.
func (s *Server) newMessage(model string, bodyBytes int, rep reply) message {
	if model == "" {
		model = "claude-fake"
	}
	return message{
		ID:    "msg_fake_" + strconv.FormatInt(s.msgSeq.Add(1), 10),
		Type:  "message",
		Role:  "assistant",
		Model: model,
		Usage: usage{InputTokens: tokens(bodyBytes), OutputTokens: rep.outputTokens()},
	}
}

// jsonReply answers a non-streaming request. A SLOW reply still takes as
// long as its stream would, so callers can rely on it being slow.
func jsonReply(ctx context.Context, w http.ResponseWriter, msg message, rep reply) error {
	for _, b := range rep.blocks {
		if err := fakehttp.Pause(ctx, rep.delay*time.Duration(max(0, len(b.pieces)-1))); err != nil {
			return err
		}
	}
	msg.Content = rep.blocks
	msg.StopReason = &rep.stopReason
	return fakehttp.WriteJSON(w, http.StatusOK, msg)
}

func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeBodyError(w, err)
		return
	}
	_ = fakehttp.WriteJSON(w, http.StatusOK, struct {
		InputTokens int `json:"input_tokens"`
	}{tokens(len(body))})
}

type modelInfo struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

func models() []modelInfo {
	return []modelInfo{
		{"model", "claude-sonnet-4-5", "Claude Sonnet 4.5 (fake)", "2025-09-29T00:00:00Z"},
		{"model", "claude-opus-4-8", "Claude Opus 4.8 (fake)", "2026-01-01T00:00:00Z"},
		{"model", "claude-haiku-4-5", "Claude Haiku 4.5 (fake)", "2025-10-01T00:00:00Z"},
	}
}

func handleModels(w http.ResponseWriter, _ *http.Request) {
	list := models()
	_ = fakehttp.WriteJSON(w, http.StatusOK, struct {
		Data    []modelInfo `json:"data"`
		HasMore bool        `json:"has_more"`
		FirstID string      `json:"first_id"`
		LastID  string      `json:"last_id"`
	}{list, false, list[0].ID, list[len(list)-1].ID})
}

// handleModel serves any model id, since the CLI accepts any model string.
func handleModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	_ = fakehttp.WriteJSON(w, http.StatusOK, modelInfo{"model", id, id + " (fake)", "2025-01-01T00:00:00Z"})
}

// handleNotFound also answers the connectivity preflight (HEAD /) some CLI
// versions send; a quick 404 is all they need.
func handleNotFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("fake: no route %s %s", r.Method, r.URL.Path))
}

func writeBodyError(w http.ResponseWriter, err error) {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", err.Error())
		return
	}
	writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("fake: read body: %v", err))
}

func writeError(w http.ResponseWriter, status int, errType, msg string) {
	var e apiError
	e.Type = "error"
	e.Error.Type = errType
	e.Error.Message = msg
	e.RequestID = "req_fake_error"
	w.Header().Set("Request-Id", e.RequestID)
	_ = fakehttp.WriteJSON(w, status, e)
}
