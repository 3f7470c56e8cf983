package fakeopenai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// Wire shapes of Chat Completions (what OpenCode reads through
// @ai-sdk/openai-compatible).
type (
	chatChunk struct {
		ID      string        `json:"id"`
		Object  string        `json:"object"`
		Created int64         `json:"created"`
		Model   string        `json:"model"`
		Choices []chunkChoice `json:"choices"`
		Usage   *chatUsage    `json:"usage,omitempty"`
	}
	chunkChoice struct {
		Index        int       `json:"index"`
		Delta        chatDelta `json:"delta"`
		FinishReason *string   `json:"finish_reason"`
	}
	chatDelta struct {
		Role      string          `json:"role,omitempty"`
		Content   *string         `json:"content,omitempty"`
		ToolCalls []toolCallDelta `json:"tool_calls,omitempty"`
	}
	toolCallDelta struct {
		Index    int           `json:"index"`
		ID       string        `json:"id,omitempty"`
		Type     string        `json:"type,omitempty"`
		Function functionDelta `json:"function"`
	}
	functionDelta struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	chatUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	chatCompletion struct {
		ID      string             `json:"id"`
		Object  string             `json:"object"`
		Created int64              `json:"created"`
		Model   string             `json:"model"`
		Choices []completionChoice `json:"choices"`
		Usage   chatUsage          `json:"usage"`
	}
	completionChoice struct {
		Index        int              `json:"index"`
		Message      chatReplyMessage `json:"message"`
		FinishReason string           `json:"finish_reason"`
	}
	chatReplyMessage struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
	}
	chatToolCall struct {
		ID       string        `json:"id"`
		Type     string        `json:"type"`
		Function functionDelta `json:"function"`
	}
)

// chatReply is one reply built for a Chat Completions request.
type chatReply struct {
	head  chatChunk // id, created, model: the fields every chunk repeats
	rep   reply
	call  *toolCall
	usage chatUsage
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	body := bodyOf(r)
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fake: body is not a Chat Completions request: %v", err))
		return
	}
	t := req.turn()
	rep := decide(t, s.opts)
	if rep.status != http.StatusOK {
		writeStatusError(w, rep.status)
		return
	}
	n := strconv.FormatInt(s.next(), 10)
	cr := chatReply{
		head: chatChunk{ID: "chatcmpl-fake-" + n, Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: modelOr(req.Model)},
		rep:  rep,
	}
	out := len(rep.text)
	if rep.command != "" {
		c := chatShellCall(t.tools, rep.command)
		cr.call, out = &c, len(c.args)
	}
	if rep.call != nil {
		cr.call, out = rep.call, len(rep.call.args)
	}
	cr.usage = chatUsage{PromptTokens: tokens(len(body)), CompletionTokens: tokens(out)}
	cr.usage.TotalTokens = cr.usage.PromptTokens + cr.usage.CompletionTokens
	w.Header().Set("X-Request-Id", "req_fake_"+n)
	if !req.Stream {
		if err := fakehttp.Pause(r.Context(), rep.slowWait()); err != nil {
			return
		}
		_ = fakehttp.WriteJSON(w, http.StatusOK, cr.completion("call_fake_"+n))
		return
	}
	if err := cr.stream(r.Context(), startSSE(w), "call_fake_"+n, req.StreamOptions.IncludeUsage); err != nil {
		s.opts.Logger.Debug("fakeopenai stream cut short", "id", cr.head.ID, "err", err)
		// Returning would let net/http end the chunked body cleanly, and a
		// stream cut off by Close must not look complete to the client.
		panic(http.ErrAbortHandler)
	}
}

func (cr *chatReply) finishReason() string {
	if cr.call != nil {
		return "tool_calls"
	}
	return "stop"
}

func (cr *chatReply) completion(callID string) chatCompletion {
	msg := chatReplyMessage{Role: "assistant"}
	if cr.call != nil {
		msg.ToolCalls = []chatToolCall{{ID: callID, Type: "function", Function: functionDelta{Name: cr.call.name, Arguments: string(cr.call.args)}}}
	} else {
		text := cr.rep.text
		msg.Content = &text
	}
	return chatCompletion{
		ID: cr.head.ID, Object: "chat.completion", Created: cr.head.Created, Model: cr.head.Model,
		Choices: []completionChoice{{Index: 0, Message: msg, FinishReason: cr.finishReason()}},
		Usage:   cr.usage,
	}
}

// chunk is one stream chunk carrying delta.
func (cr *chatReply) chunk(delta chatDelta, finish *string) chatChunk {
	c := cr.head
	c.Choices = []chunkChoice{{Index: 0, Delta: delta, FinishReason: finish}}
	return c
}

// stream sends the reply as Chat Completions streams it: the role, text or
// tool call deltas, the finish reason, usage when asked for, then [DONE].
func (cr *chatReply) stream(ctx context.Context, sse sseWriter, callID string, withUsage bool) error {
	empty := ""
	if err := sse.sendJSON("", cr.chunk(chatDelta{Role: "assistant", Content: &empty}, nil)); err != nil {
		return err
	}
	if cr.call != nil {
		first := toolCallDelta{Index: 0, ID: callID, Type: "function", Function: functionDelta{Name: cr.call.name}}
		if err := sse.sendJSON("", cr.chunk(chatDelta{ToolCalls: []toolCallDelta{first}}, nil)); err != nil {
			return err
		}
		for _, p := range argPiecesOf(cr.call.args) {
			d := toolCallDelta{Index: 0, Function: functionDelta{Arguments: p}}
			if err := sse.sendJSON("", cr.chunk(chatDelta{ToolCalls: []toolCallDelta{d}}, nil)); err != nil {
				return err
			}
		}
	} else {
		for i, p := range cr.rep.textPieces() {
			if i > 0 {
				if err := fakehttp.Pause(ctx, cr.rep.delay); err != nil {
					return err
				}
			}
			if err := sse.sendJSON("", cr.chunk(chatDelta{Content: &p}, nil)); err != nil {
				return err
			}
		}
	}
	finish := cr.finishReason()
	if err := sse.sendJSON("", cr.chunk(chatDelta{}, &finish)); err != nil {
		return err
	}
	if withUsage {
		c := cr.head
		c.Choices, c.Usage = []chunkChoice{}, &cr.usage
		if err := sse.sendJSON("", c); err != nil {
			return err
		}
	}
	return sse.send("", []byte("[DONE]"))
}
