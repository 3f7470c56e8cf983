package fakeopenai

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestErrorTrigger(t *testing.T) {
	srv, c := startServer(t, Options{})
	for _, tc := range []struct {
		path   string
		body   map[string]any
		status int
	}{
		{"/v1/responses", respBody(true, nil, userItem("ERROR_400")), 400},
		{"/v1/chat/completions", chatBody(true, []string{"bash"}, chatMsg("user", `"ERROR_429"`)), 429},
		{"/v1/chat/completions", chatBody(false, []string{"bash"}, chatMsg("user", "ERROR_500")), 500},
	} {
		resp := post(t.Context(), t, c, srv.URL()+tc.path, tc.body)
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		err := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if resp.StatusCode != tc.status || e.Error.Message != "fake error "+strconv.Itoa(tc.status) || e.Error.Type != errorType(tc.status) || e.Error.Code != nil {
			t.Errorf("%s: status %d body %+v, want %d", tc.path, resp.StatusCode, e, tc.status)
		}
		if (tc.status == http.StatusTooManyRequests) != (resp.Header.Get("Retry-After") == "1") {
			t.Errorf("%d: Retry-After %q", tc.status, resp.Header.Get("Retry-After"))
		}
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests recorded, want 3", n)
	}
}

func TestBadRequests(t *testing.T) {
	srv, c := startServer(t, Options{})
	for _, tc := range []struct {
		path, body string
		status     int
		contains   string
	}{
		{"/v1/responses", "not json", 400, "not a Responses request"},
		{"/v1/responses", `{"input": 5}`, 400, "not a Responses request"},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": 5}]}`, 400, "not a Chat Completions request"},
		{"/v1/chat/completions", `[]`, 400, "not a Chat Completions request"},
	} {
		resp := postRaw(t.Context(), t, c, srv.URL()+tc.path, []byte(tc.body))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.contains) || !strings.Contains(string(b), `"invalid_request_error"`) {
			t.Errorf("%s %q: status %d body %s", tc.path, tc.body, resp.StatusCode, b)
		}
	}
}

func TestCompressedBodyRefused(t *testing.T) {
	srv, c := startServer(t, Options{})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+"/v1/responses", strings.NewReader("\x28\xb5\x2f\xfd"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "zstd")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(b), "zstd") {
		t.Errorf("status %d body %s", resp.StatusCode, b)
	}
}

func TestModels(t *testing.T) {
	srv, c := startServer(t, Options{})
	resp, b := get(t, c, http.MethodGet, srv.URL()+"/v1/models")
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
		Models []any
	}
	if err := json.Unmarshal(b, &list); err != nil || resp.StatusCode != 200 || list.Object != "list" || list.Models == nil {
		t.Fatalf("status %d body %s err %v", resp.StatusCode, b, err)
	}
	var ids []string
	for _, m := range list.Data {
		if m.Object != "model" {
			t.Errorf("model %+v", m)
		}
		ids = append(ids, m.ID)
	}
	if !strings.Contains(strings.Join(ids, ","), "gpt-5.5") || !strings.Contains(strings.Join(ids, ","), "fake-model") {
		t.Errorf("models %q", ids)
	}
	resp, b = get(t, c, http.MethodGet, srv.URL()+"/v1/models/any-model")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"any-model"`) {
		t.Errorf("status %d body %s", resp.StatusCode, b)
	}
}

func TestNotFound(t *testing.T) {
	srv, c := startServer(t, Options{})
	for _, rq := range []struct{ method, path string }{
		{http.MethodHead, "/"}, {http.MethodGet, "/"}, {http.MethodGet, "/v1/responses"},
		{http.MethodGet, "/v1/chat/completions"}, {http.MethodPost, "/v1/completions"}, {http.MethodGet, "/npm/@opencode-ai/plugin"},
	} {
		resp, b := get(t, c, rq.method, srv.URL()+rq.path)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s: status %d", rq.method, rq.path, resp.StatusCode)
		}
		if rq.method != http.MethodHead && !strings.Contains(string(b), "no route") {
			t.Errorf("%s %s: body %s", rq.method, rq.path, b)
		}
	}
}

func TestRequestsRecorded(t *testing.T) {
	srv, c := startServer(t, Options{})
	resp := post(t.Context(), t, c, srv.URL()+"/v1/responses?x=1", respBody(true, nil, userItem("SAY hi")))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	get(t, c, http.MethodGet, srv.URL()+"/v1/models")
	resp = postRaw(t.Context(), t, c, srv.URL()+"/v1/chat/completions", []byte("not json"))
	resp.Body.Close()

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("got %d requests, want 3", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/responses" || r.Query.Get("x") != "1" || r.Header.Get("Authorization") != "Bearer sk-fake" {
		t.Errorf("request %s %s ?%v %v", r.Method, r.Path, r.Query, r.Header)
	}
	var body responsesRequest
	if err := json.Unmarshal(r.Body, &body); err != nil || !body.Stream || body.turn().prompt != "SAY hi" {
		t.Errorf("body %s (%v)", r.Body, err)
	}
	if reqs[1].Method != http.MethodGet || reqs[1].Body != nil {
		t.Errorf("second request %+v", reqs[1])
	}
	if reqs[2].Body != nil {
		t.Errorf("a body that is not JSON was kept: %s", reqs[2].Body)
	}
	// The copy is the caller's own.
	reqs[0].Header.Set("Authorization", "changed")
	reqs[0].Body[0] = 'X'
	if again := srv.Requests()[0]; again.Header.Get("Authorization") != "Bearer sk-fake" || again.Body[0] != '{' {
		t.Error("Requests shares its data with the caller")
	}
}

func TestSlowStreamIsPaced(t *testing.T) {
	const chunks, delay = 5, 20 * time.Millisecond
	srv, c := startServer(t, Options{SlowChunks: chunks, SlowChunkDelay: delay})
	for _, tc := range []struct {
		path string
		body map[string]any
		text func([]sseEvent) (string, int)
	}{
		{"/v1/responses", respBody(true, nil, userItem("go SLOW")), func(evs []sseEvent) (string, int) {
			r := foldResponses(t, evs)
			return r.text, r.deltas
		}},
		{"/v1/chat/completions", chatBody(true, nil, chatMsg("user", `"SLOW"`)), func(evs []sseEvent) (string, int) {
			r := foldChat(t, evs)
			return r.text, r.chunks - 3 // less the role, finish and usage chunks
		}},
	} {
		start := time.Now()
		resp := post(t.Context(), t, c, srv.URL()+tc.path, tc.body)
		text, deltas := tc.text(readSSE(t, resp.Body))
		resp.Body.Close()
		if took := time.Since(start); took < (chunks-1)*delay {
			t.Errorf("%s: stream took %v, want at least %v", tc.path, took, (chunks-1)*delay)
		}
		if deltas != chunks || text != "tick 1 tick 2 tick 3 tick 4 tick 5" {
			t.Errorf("%s: %d deltas, text %q", tc.path, deltas, text)
		}
	}
}

func TestSlowJSONIsSlow(t *testing.T) {
	const chunks, delay = 4, 20 * time.Millisecond
	srv, c := startServer(t, Options{SlowChunks: chunks, SlowChunkDelay: delay})
	start := time.Now()
	resp := post(t.Context(), t, c, srv.URL()+"/v1/chat/completions", chatBody(false, nil, chatMsg("user", "SLOW")))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(start); took < (chunks-1)*delay || !strings.Contains(string(b), "tick 1 tick 2 tick 3 tick 4") {
		t.Errorf("took %v, body %s", took, b)
	}
}

// startSlow opens a long SLOW stream and reads up to its first text delta.
func startSlow(ctx context.Context, t *testing.T, srv *Server, c *http.Client) *http.Response {
	t.Helper()
	resp := post(ctx, t, c, srv.URL()+"/v1/responses", respBody(true, nil, userItem("SLOW")))
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before a delta: %v", err)
		}
		if strings.Contains(line, "response.output_text.delta") {
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
