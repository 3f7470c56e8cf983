package fakeanthropic

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

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

func TestCountTokens(t *testing.T) {
	srv, c := startServer(t, Options{})
	body := map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": strings.Repeat("a", 400)}}}
	resp := post(t.Context(), t, c, srv.URL()+"/v1/messages/count_tokens?beta=true", body)
	defer resp.Body.Close()
	var got map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if resp.StatusCode != 200 || len(got) != 1 || got["input_tokens"] < 100 {
		t.Errorf("status %d body %v", resp.StatusCode, got)
	}
}

func TestModels(t *testing.T) {
	srv, c := startServer(t, Options{})
	resp, b := get(t, c, http.MethodGet, srv.URL()+"/v1/models?beta=true&limit=100")
	var list struct {
		Data []struct{ Type, ID string }
	}
	if err := json.Unmarshal(b, &list); err != nil || resp.StatusCode != 200 || len(list.Data) == 0 || list.Data[0].Type != "model" {
		t.Errorf("status %d body %s err %v", resp.StatusCode, b, err)
	}
	resp, b = get(t, c, http.MethodGet, srv.URL()+"/v1/models/claude-any")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"claude-any"`) {
		t.Errorf("status %d body %s", resp.StatusCode, b)
	}
}

func TestNotFound(t *testing.T) {
	srv, c := startServer(t, Options{})
	for _, rq := range []struct{ method, path string }{
		{http.MethodHead, "/"}, {http.MethodGet, "/"}, {http.MethodGet, "/v1/nope?beta=true"}, {http.MethodGet, "/v1/messages"},
	} {
		resp, b := get(t, c, rq.method, srv.URL()+rq.path)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s: status %d", rq.method, rq.path, resp.StatusCode)
		}
		if rq.method == http.MethodGet && !strings.Contains(string(b), `"not_found_error"`) {
			t.Errorf("%s %s: body %s", rq.method, rq.path, b)
		}
	}
}

func TestRequestsRecorded(t *testing.T) {
	srv, c := startServer(t, Options{})
	resp := post(t.Context(), t, c, srv.URL()+"/v1/messages?beta=true", msgBody(true, "say hi"))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	get(t, c, http.MethodHead, srv.URL()+"/")

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/messages" || r.Query.Get("beta") != "true" {
		t.Errorf("request %s %s ?%v", r.Method, r.Path, r.Query)
	}
	if r.Header.Get("X-Api-Key") != "sk-fake" || r.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("headers %v", r.Header)
	}
	var body messagesRequest
	if err := json.Unmarshal(r.Body, &body); err != nil || !body.Stream || body.lastUser().prompt() != "say hi" {
		t.Errorf("body %s (%v)", r.Body, err)
	}
	if reqs[1].Method != http.MethodHead || reqs[1].Path != "/" || reqs[1].Body != nil {
		t.Errorf("second request %+v", reqs[1])
	}
	// The copy is the caller's own.
	reqs[0].Header.Set("X-Api-Key", "changed")
	if srv.Requests()[0].Header.Get("X-Api-Key") != "sk-fake" {
		t.Error("Requests shares its headers with the caller")
	}
}

func TestSlowStreamIsPaced(t *testing.T) {
	const chunks, delay = 5, 20 * time.Millisecond
	srv, c := startServer(t, Options{SlowChunks: chunks, SlowChunkDelay: delay})
	start := time.Now()
	resp := post(t.Context(), t, c, srv.URL()+"/v1/messages", msgBody(true, "go SLOW"))
	defer resp.Body.Close()
	m := assemble(t, readSSE(t, resp.Body))
	if took := time.Since(start); took < (chunks-1)*delay {
		t.Errorf("stream took %v, want at least %v", took, (chunks-1)*delay)
	}
	if m.deltas != chunks || m.Content[0].Text != "tick 1 tick 2 tick 3 tick 4 tick 5" {
		t.Errorf("%d deltas, text %q", m.deltas, m.Content[0].Text)
	}
}

func TestSlowJSONIsSlow(t *testing.T) {
	const chunks, delay = 4, 20 * time.Millisecond
	srv, c := startServer(t, Options{SlowChunks: chunks, SlowChunkDelay: delay})
	start := time.Now()
	resp := post(t.Context(), t, c, srv.URL()+"/v1/messages", msgBody(false, "SLOW"))
	defer resp.Body.Close()
	var m outMessage
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if took := time.Since(start); took < (chunks-1)*delay || m.Content[0].Text != "tick 1 tick 2 tick 3 tick 4" {
		t.Errorf("took %v, text %q", took, m.Content[0].Text)
	}
}

// startSlow opens a long SLOW stream and reads up to its first text delta.
func startSlow(ctx context.Context, t *testing.T, srv *Server, c *http.Client) *http.Response {
	t.Helper()
	resp := post(ctx, t, c, srv.URL()+"/v1/messages?beta=true", msgBody(true, "SLOW"))
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before a delta: %v", err)
		}
		if strings.Contains(line, "text_delta") {
			return resp
		}
	}
}

func TestSlowStopsWhenClientCancels(t *testing.T) {
	srv, c := startServer(t, Options{SlowChunks: 10000, SlowChunkDelay: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	resp := startSlow(ctx, t, srv, c)
	cancel()
	resp.Body.Close()
	// The handler must notice by itself, before Close: goleak would catch a
	// stuck one, and Close waits for it, so time it.
	start := time.Now()
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close took %v", took)
	}
}
