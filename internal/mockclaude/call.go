package mockclaude

import (
	"encoding/json"
	"strings"
)

// apiCall is one simulated model request: the content blocks it returns
// become `assistant` lines (one per block, sharing the message id, as the
// real CLI writes them) and, with --include-partial-messages, the
// stream_event lines wrapping the SSE events around them.
type apiCall struct {
	t         *turn
	id        string
	requestID string
	model     string
	index     int
	in, out   int
	partial   bool
}

// newCall starts an API call: system/status "requesting" and message_start
// when partial messages are on.
func (t *turn) newCall() (*apiCall, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	t.calls++
	s := t.s
	c := &apiCall{
		t: t, id: s.ids.token("msg_mock_"), requestID: s.ids.token("req_mock_"),
		model: s.currentModel(), in: baseInputTokens + len(t.prompt)/4, partial: s.opts.partial,
	}
	if !c.partial {
		return c, nil
	}
	if err := s.out.send(systemStatus{Type: "system", Subtype: "status", Status: ptr("requesting"), UUID: s.ids.uuid(), SessionID: s.sessionID}); err != nil {
		return nil, err
	}
	start := c.message(nil)
	start.ContextManagement = nil
	return c, c.event(streamEvent{Type: "message_start", Message: &start}, ptr(int64(t.elapsedMS())))
}

func (c *apiCall) message(content []any) apiMessage {
	if content == nil {
		content = []any{}
	}
	return apiMessage{
		ID: c.id, Type: "message", Role: "assistant", Model: c.model, Content: content,
		Usage:             msgUsage{InputTokens: c.in, OutputTokens: 1},
		ContextManagement: json.RawMessage("null"),
	}
}

func (c *apiCall) event(ev streamEvent, ttft *int64) error {
	s := c.t.s
	return s.out.send(streamEventMsg{Type: "stream_event", Event: ev, SessionID: s.sessionID, UUID: s.ids.uuid(), TTFTMS: ttft})
}

func (c *apiCall) assistant(block any) error {
	s := c.t.s
	return s.out.send(assistantMsg{Type: "assistant", Message: c.message([]any{block}), SessionID: s.sessionID, UUID: s.ids.uuid(), RequestID: c.requestID})
}

// text streams a text block chunk by chunk (pausing Delay between chunks)
// and then writes the whole block as an `assistant` line. On interrupt the
// text so far is written as a partial assistant message.
func (c *apiCall) text(chunks []string) (string, error) {
	idx := c.index
	c.index++
	if c.partial {
		if err := c.event(streamEvent{Type: "content_block_start", Index: &idx, ContentBlock: textBlock{Type: "text"}}, nil); err != nil {
			return "", err
		}
	}
	var sb strings.Builder
	for i, chunk := range chunks {
		if i > 0 {
			if err := c.t.pause(); err != nil {
				return "", c.abort(sb.String(), err)
			}
		}
		sb.WriteString(chunk)
		if c.partial {
			if err := c.event(streamEvent{Type: "content_block_delta", Index: &idx, Delta: textDelta{Type: "text_delta", Text: chunk}}, nil); err != nil {
				return "", err
			}
		}
	}
	text := sb.String()
	if err := c.assistant(textBlock{Type: "text", Text: text}); err != nil {
		return "", err
	}
	c.out += tokensFor(len(text))
	return text, c.blockStop(idx)
}

// abort writes the partial assistant message of an interrupted stream.
func (c *apiCall) abort(sofar string, cause error) error {
	if isInterrupt(cause) && sofar != "" {
		if err := c.assistant(textBlock{Type: "text", Text: sofar}); err != nil {
			return err
		}
	}
	return cause
}

// toolUse writes a tool_use block (input streamed as input_json_delta).
func (c *apiCall) toolUse(id, name string, input json.RawMessage) error {
	if err := c.t.check(); err != nil {
		return err
	}
	idx := c.index
	c.index++
	if c.partial {
		start := toolUseBlock{Type: "tool_use", ID: id, Name: name, Input: json.RawMessage("{}")}
		if err := c.event(streamEvent{Type: "content_block_start", Index: &idx, ContentBlock: start}, nil); err != nil {
			return err
		}
		half := len(input) / 2
		for _, part := range []string{string(input[:half]), string(input[half:])} {
			if err := c.event(streamEvent{Type: "content_block_delta", Index: &idx, Delta: inputJSONDelta{Type: "input_json_delta", PartialJSON: part}}, nil); err != nil {
				return err
			}
		}
	}
	if err := c.assistant(toolUseBlock{Type: "tool_use", ID: id, Name: name, Input: input}); err != nil {
		return err
	}
	c.out += tokensFor(len(input))
	return c.blockStop(idx)
}

func (c *apiCall) blockStop(idx int) error {
	if !c.partial {
		return nil
	}
	return c.event(streamEvent{Type: "content_block_stop", Index: &idx}, nil)
}

// end closes the call (message_delta, message_stop) and accounts its usage.
func (c *apiCall) end(stopReason string) error {
	if c.partial {
		if err := c.event(streamEvent{Type: "message_delta", Delta: messageDelta{StopReason: stopReason}, Usage: map[string]int{"output_tokens": c.out}}, nil); err != nil {
			return err
		}
		if err := c.event(streamEvent{Type: "message_stop"}, nil); err != nil {
			return err
		}
	}
	c.t.account(c.model, c.in, c.out)
	return nil
}

// reply is the common shape of a call that only says something.
func (t *turn) reply(chunks []string) (string, error) {
	c, err := t.newCall()
	if err != nil {
		return "", err
	}
	text, err := c.text(chunks)
	if err != nil {
		return "", err
	}
	return text, c.end("end_turn")
}

// chunkWords splits text into about n pieces at word boundaries.
func chunkWords(text string, n int) []string {
	words := strings.SplitAfter(text, " ")
	if n < 1 {
		n = 1
	}
	per := (len(words) + n - 1) / n
	if per < 1 {
		per = 1
	}
	var chunks []string
	for i := 0; i < len(words); i += per {
		end := min(i+per, len(words))
		chunks = append(chunks, strings.Join(words[i:end], ""))
	}
	return chunks
}
