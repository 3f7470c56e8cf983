package fakeanthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// startServer starts a fake closed at cleanup, and a client whose idle
// connections are dropped first, so goleak sees no transport goroutines.
func startServer(t *testing.T, opts Options) (*Server, *http.Client) {
	t.Helper()
	srv, err := Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv, &http.Client{Transport: tr}
}

// msgBody is a Messages request body whose last user message has content c
// (a string or a list of blocks).
func msgBody(stream bool, c any) map[string]any {
	return map[string]any{
		"model":      "claude-test-model",
		"max_tokens": 1024,
		"stream":     stream,
		"messages":   []any{map[string]any{"role": "user", "content": c}},
	}
}

func textBlocks(texts ...string) []any {
	out := make([]any, len(texts))
	for i, s := range texts {
		out[i] = map[string]any{"type": "text", "text": s}
	}
	return out
}

func post(ctx context.Context, t *testing.T, c *http.Client, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("encode body: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-fake")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

type sseEvent struct {
	name string
	data json.RawMessage
}

// readSSE parses a whole event stream, checking each event's name matches
// the type inside its data, as the real API's do.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		case line == "":
			var typ struct{ Type string }
			if err := json.Unmarshal(cur.data, &typ); err != nil {
				t.Fatalf("event %q data %s: %v", cur.name, cur.data, err)
			}
			if typ.Type != cur.name {
				t.Fatalf("event %q carries type %q", cur.name, typ.Type)
			}
			out = append(out, cur)
			cur = sseEvent{}
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read stream: %v", err)
	}
	return out
}

func eventNames(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.name
	}
	return out
}

// outBlock is a content block as a client sees it, streamed or not.
type outBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// outMessage is a whole reply: the non-streaming body, or a stream folded
// back into one.
type outMessage struct {
	ID         string     `json:"id"`
	Model      string     `json:"model"`
	Content    []outBlock `json:"content"`
	StopReason string     `json:"stop_reason"`
	Usage      struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	deltas int // content_block_delta events seen, streams only
}

// assemble folds a stream into the message it carries, the way the SDK
// does: text deltas are appended, input_json_delta pieces are joined and
// parsed once the block stops.
func assemble(t *testing.T, evs []sseEvent) outMessage {
	t.Helper()
	var m outMessage
	var partial []string
	for _, e := range evs {
		var ev struct {
			Message      outMessage `json:"message"`
			Index        int        `json:"index"`
			ContentBlock outBlock   `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(e.data, &ev); err != nil {
			t.Fatalf("decode %s: %v", e.name, err)
		}
		switch e.name {
		case "message_start":
			m = ev.Message
		case "content_block_start":
			if ev.Index != len(m.Content) {
				t.Fatalf("block %d started, want index %d", ev.Index, len(m.Content))
			}
			m.Content = append(m.Content, ev.ContentBlock)
			partial = append(partial, "")
		case "content_block_delta":
			m.deltas++
			switch ev.Delta.Type {
			case "text_delta":
				m.Content[ev.Index].Text += ev.Delta.Text
			case "input_json_delta":
				partial[ev.Index] += ev.Delta.PartialJSON
			default:
				t.Fatalf("unknown delta type %q", ev.Delta.Type)
			}
		case "content_block_stop":
			if b := &m.Content[ev.Index]; b.Type == "tool_use" {
				if !json.Valid([]byte(partial[ev.Index])) {
					t.Fatalf("tool input %q is not JSON", partial[ev.Index])
				}
				b.Input = json.RawMessage(partial[ev.Index])
			}
		case "message_delta":
			m.StopReason = ev.Delta.StopReason
			m.Usage.OutputTokens = ev.Usage.OutputTokens
		}
	}
	return m
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(t *testing.T, got, want json.RawMessage) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}
