package fakeopenai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
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

func postRaw(ctx context.Context, t *testing.T, c *http.Client, url string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-fake")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

func post(ctx context.Context, t *testing.T, c *http.Client, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("encode body: %v", err)
	}
	return postRaw(ctx, t, c, url, b)
}

func get(t *testing.T, c *http.Client, method, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return resp, b
}

// respBody is a Responses request whose input ends with items; tools are
// function tools with those names.
func respBody(stream bool, tools []string, items ...any) map[string]any {
	specs := make([]any, len(tools))
	for i, n := range tools {
		specs[i] = map[string]any{"type": "function", "name": n, "parameters": map[string]any{"type": "object"}}
	}
	return map[string]any{"model": "gpt-5.5", "stream": stream, "input": items, "tools": specs}
}

func userItem(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}
}

// chatBody is a Chat Completions request with those messages and tools.
func chatBody(stream bool, tools []string, msgs ...any) map[string]any {
	specs := make([]any, len(tools))
	for i, n := range tools {
		specs[i] = map[string]any{"type": "function", "function": map[string]any{"name": n, "parameters": map[string]any{"type": "object"}}}
	}
	b := map[string]any{"model": "fake-model", "stream": stream, "messages": msgs, "stream_options": map[string]any{"include_usage": true}}
	if len(specs) > 0 {
		b["tools"] = specs
	}
	return b
}

func chatMsg(role, text string) map[string]any {
	return map[string]any{"role": role, "content": text}
}

type sseEvent struct {
	name string // empty for Chat Completions, which names no events
	data json.RawMessage
}

// readSSE parses a whole event stream. A named event must carry its name as
// the type inside its data, as the Responses API's do; "[DONE]" is kept raw.
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
			if string(cur.data) != "[DONE]" {
				var typ struct{ Type string }
				if err := json.Unmarshal(cur.data, &typ); err != nil {
					t.Fatalf("event %q data %s: %v", cur.name, cur.data, err)
				}
				if cur.name != "" && typ.Type != cur.name {
					t.Fatalf("event %q carries type %q", cur.name, typ.Type)
				}
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

// outItem is a Responses output item as a client sees it.
type outItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Role      string `json:"role"`
	Name      string `json:"name"`
	CallID    string `json:"call_id"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// outResponse is a whole Responses reply: the JSON body, or what a stream
// adds up to.
type outResponse struct {
	ID     string    `json:"id"`
	Status string    `json:"status"`
	Model  string    `json:"model"`
	Output []outItem `json:"output"`
	Usage  struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	// Folded from the stream: the text deltas and argument deltas.
	text, args string
	deltas     int
}

// foldResponses reads a Responses stream the way Codex does: deltas are
// joined, each done event must match what its deltas built, and the
// response.completed event gives the final response.
func foldResponses(t *testing.T, evs []sseEvent) outResponse {
	t.Helper()
	var out outResponse
	seq := 0
	for _, e := range evs {
		var ev struct {
			SequenceNumber *int        `json:"sequence_number"`
			Response       outResponse `json:"response"`
			Item           outItem     `json:"item"`
			Delta          string      `json:"delta"`
			Text           string      `json:"text"`
			Arguments      string      `json:"arguments"`
		}
		if err := json.Unmarshal(e.data, &ev); err != nil {
			t.Fatalf("decode %s: %v", e.name, err)
		}
		if ev.SequenceNumber == nil || *ev.SequenceNumber != seq {
			t.Fatalf("%s: sequence_number %v, want %d", e.name, ev.SequenceNumber, seq)
		}
		seq++
		switch e.name {
		case "response.output_text.delta":
			out.text += ev.Delta
			out.deltas++
		case "response.output_text.done":
			if ev.Text != out.text {
				t.Fatalf("text done %q, deltas built %q", ev.Text, out.text)
			}
		case "response.function_call_arguments.delta":
			out.args += ev.Delta
			out.deltas++
		case "response.function_call_arguments.done":
			if ev.Arguments != out.args {
				t.Fatalf("arguments done %q, deltas built %q", ev.Arguments, out.args)
			}
		case "response.completed":
			text, args, deltas := out.text, out.args, out.deltas
			out = ev.Response
			out.text, out.args, out.deltas = text, args, deltas
		}
	}
	return out
}

// outChat is a whole Chat Completions reply: the JSON body's first choice,
// or what a stream adds up to.
type outChat struct {
	text         string
	toolID       string
	toolName     string
	toolArgs     string
	finishReason string
	usage        *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	chunks int
	done   bool // the stream ended with [DONE]
}

// foldChat reads a Chat Completions stream as the AI SDK does.
func foldChat(t *testing.T, evs []sseEvent) outChat {
	t.Helper()
	var out outChat
	for i, e := range evs {
		if string(e.data) == "[DONE]" {
			if i != len(evs)-1 {
				t.Fatalf("[DONE] at %d of %d events", i, len(evs))
			}
			out.done = true
			continue
		}
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				TotalTokens      int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(e.data, &c); err != nil {
			t.Fatalf("decode chunk %s: %v", e.data, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk object %q", c.Object)
		}
		out.chunks++
		if c.Usage != nil {
			out.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				out.text += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" {
					out.toolID = tc.ID
				}
				out.toolName += tc.Function.Name
				out.toolArgs += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				out.finishReason = *ch.FinishReason
			}
		}
	}
	return out
}

// capturedRequest is one line of a request capture in testdata.
type capturedRequest struct {
	Method string          `json:"method"`
	URL    string          `json:"url"`
	Body   json.RawMessage `json:"body"`
}

func readCapture(t testing.TB, name string) []capturedRequest {
	t.Helper()
	var out []capturedRequest
	for _, line := range readLines(t, name) {
		var r capturedRequest
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, r)
	}
	return out
}

// readLines reads a testdata NDJSON file.
func readLines(t testing.TB, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read testdata: %v", err)
	}
	var out [][]byte
	for line := range bytes.SplitSeq(bytes.TrimSpace(b), []byte("\n")) {
		out = append(out, line)
	}
	return out
}
