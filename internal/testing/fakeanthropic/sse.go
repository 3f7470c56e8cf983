package fakeanthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

const (
	// textPieceRunes is the size of a streamed text delta, small enough that
	// even short replies arrive as several deltas, as real ones do.
	textPieceRunes = 8
	// jsonPieces is how many input_json_delta events carry a tool input, so
	// clients must really reassemble partial JSON.
	jsonPieces = 3
)

// Event payloads of the Messages streaming protocol.
type (
	typed struct {
		Type string `json:"type"`
	}
	messageStartEvent struct {
		Type    string  `json:"type"`
		Message message `json:"message"`
	}
	blockStartEvent struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock block  `json:"content_block"`
	}
	blockDeltaEvent struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta any    `json:"delta"`
	}
	textDelta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	jsonDelta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	blockStopEvent struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	messageDeltaEvent struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
)

// sseWriter writes server-sent events and flushes each one, so a paced
// stream reaches the client chunk by chunk.
type sseWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (s sseWriter) send(event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", event, err)
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return fmt.Errorf("write %s event: %w", event, err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("flush %s event: %w", event, err)
	}
	return nil
}

// streamReply sends rep as the real API streams a message: message_start,
// ping, then start/deltas/stop per block, message_delta and message_stop.
// It returns early, with an error, once ctx ends or the client is gone.
func streamReply(ctx context.Context, w http.ResponseWriter, msg message, rep reply) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sse := sseWriter{w: w, rc: http.NewResponseController(w)}

	msg.Content = []block{}
	out := msg.Usage.OutputTokens
	msg.Usage.OutputTokens = 1 // as the real API: output is only known at the end
	if err := sse.send("message_start", messageStartEvent{"message_start", msg}); err != nil {
		return err
	}
	if err := sse.send("ping", typed{"ping"}); err != nil {
		return err
	}
	for i, b := range rep.blocks {
		if err := streamBlock(ctx, sse, i, b, rep); err != nil {
			return err
		}
	}
	var md messageDeltaEvent
	md.Type = "message_delta"
	md.Delta.StopReason = rep.stopReason
	md.Usage.OutputTokens = out
	if err := sse.send("message_delta", md); err != nil {
		return err
	}
	return sse.send("message_stop", typed{"message_stop"})
}

func streamBlock(ctx context.Context, sse sseWriter, i int, b block, rep reply) error {
	if err := sse.send("content_block_start", blockStartEvent{"content_block_start", i, b.started()}); err != nil {
		return err
	}
	for j, d := range deltas(b) {
		if j > 0 {
			if err := fakehttp.Pause(ctx, rep.delay); err != nil {
				return err
			}
		}
		if err := sse.send("content_block_delta", blockDeltaEvent{"content_block_delta", i, d}); err != nil {
			return err
		}
	}
	return sse.send("content_block_stop", blockStopEvent{"content_block_stop", i})
}

// deltas are the delta payloads that rebuild b's content.
func deltas(b block) []any {
	var out []any
	if b.kind == "tool_use" {
		per := (utf8.RuneCount(b.input) + jsonPieces - 1) / jsonPieces
		for _, p := range fakehttp.Split(string(b.input), per) {
			out = append(out, jsonDelta{"input_json_delta", p})
		}
		return out
	}
	pieces := b.pieces
	if pieces == nil {
		pieces = fakehttp.Split(b.text, textPieceRunes)
	}
	for _, p := range pieces {
		out = append(out, textDelta{"text_delta", p})
	}
	return out
}
