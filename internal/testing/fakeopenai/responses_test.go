package fakeopenai

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func streamResponses(t *testing.T, body map[string]any) outResponse {
	t.Helper()
	srv, c := startServer(t, Options{})
	resp := post(t.Context(), t, c, srv.URL()+"/v1/responses", body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return foldResponses(t, readSSE(t, resp.Body))
}

func TestResponsesTextStream(t *testing.T) {
	srv, c := startServer(t, Options{})
	resp := post(t.Context(), t, c, srv.URL()+"/v1/responses", respBody(true, []string{"exec_command"}, userItem("please SAY hello there, Codex")))
	defer resp.Body.Close()
	evs := readSSE(t, resp.Body)
	names := eventNames(evs)
	// "hello there, Codex" is 18 runes: three 8-rune deltas.
	want := []string{
		"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("events %q\nwant %q", names, want)
	}
	got := foldResponses(t, evs)
	if got.text != "hello there, Codex" || got.deltas != 3 {
		t.Errorf("deltas built %q in %d", got.text, got.deltas)
	}
	if got.Status != "completed" || got.Model != "gpt-5.5" || !strings.HasPrefix(got.ID, "resp_fake_") || len(got.Output) != 1 {
		t.Fatalf("completed response %+v", got)
	}
	item := got.Output[0]
	if item.Type != "message" || item.Role != "assistant" || item.Status != "completed" ||
		len(item.Content) != 1 || item.Content[0].Type != "output_text" || item.Content[0].Text != "hello there, Codex" {
		t.Errorf("output item %+v", item)
	}
	if got.Usage.InputTokens < 10 || got.Usage.OutputTokens < 1 || got.Usage.TotalTokens != got.Usage.InputTokens+got.Usage.OutputTokens {
		t.Errorf("usage %+v", got.Usage)
	}
}

func TestResponsesShellCall(t *testing.T) {
	for _, tc := range []struct {
		name, prompt string
		tools        []string
		wantName     string
		wantArgs     string
	}{
		{"exec_command default", "please USE_SHELL", []string{"exec_command", "write_stdin"}, "exec_command", `{"cmd":"echo hello"}`},
		{"exec_command command", "USE_SHELL ls -la \"a b\"\nthanks", []string{"apply_patch", "exec_command"}, "exec_command", `{"cmd":"ls -la \"a b\""}`},
		{"no tools", "USE_SHELL pwd", nil, "exec_command", `{"cmd":"pwd"}`},
		{"shell_command", "USE_SHELL pwd", []string{"shell_command"}, "shell_command", `{"command":"pwd"}`},
		{"shell argv", "USE_SHELL pwd", []string{"shell"}, "shell", `{"command":["bash","-lc","pwd"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := streamResponses(t, respBody(true, tc.tools, userItem(tc.prompt)))
			if len(got.Output) != 1 {
				t.Fatalf("output %+v", got.Output)
			}
			item := got.Output[0]
			if item.Type != "function_call" || item.Name != tc.wantName || item.Arguments != tc.wantArgs ||
				!strings.HasPrefix(item.CallID, "call_fake_") || item.Status != "completed" {
				t.Errorf("item %+v", item)
			}
			if got.args != tc.wantArgs || got.deltas != argPieces {
				t.Errorf("argument deltas built %q in %d", got.args, got.deltas)
			}
		})
	}
}

func TestResponsesToolOutput(t *testing.T) {
	call := map[string]any{"type": "function_call", "name": "exec_command", "call_id": "call_1", "arguments": `{"cmd":"echo hello"}`}
	for _, tc := range []struct {
		name   string
		output any
		want   string
	}{
		// Codex's exec_command result: the header is dropped.
		{"codex header", "Chunk ID: d2d970\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nhello\n", "tool said: hello"},
		{"plain", "  some output\n", "tool said: some output"},
		{"parts", []any{map[string]any{"type": "input_text", "text": "part one"}}, "tool said: part one"},
		{"long", strings.Repeat("é", 300), "tool said: " + strings.Repeat("é", maxEcho)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := map[string]any{"type": "function_call_output", "call_id": "call_1", "output": tc.output}
			got := streamResponses(t, respBody(true, []string{"exec_command"}, userItem("USE_SHELL"), call, out))
			if got.text != tc.want {
				t.Errorf("reply %q, want %q", got.text, tc.want)
			}
		})
	}
}

func TestResponsesStringInput(t *testing.T) {
	body := map[string]any{"model": "m", "stream": true, "input": "SAY plain input"}
	if got := streamResponses(t, body); got.text != "plain input" {
		t.Errorf("reply %q", got.text)
	}
}

func TestResponsesJSON(t *testing.T) {
	srv, c := startServer(t, Options{})
	for _, tc := range []struct {
		prompt, wantType string
	}{{"SAY not streamed", "message"}, {"USE_SHELL", "function_call"}} {
		resp := post(t.Context(), t, c, srv.URL()+"/v1/responses", respBody(false, []string{"exec_command"}, userItem(tc.prompt)))
		var got outResponse
		err := json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%q: status %d, %v", tc.prompt, resp.StatusCode, err)
		}
		if got.Status != "completed" || len(got.Output) != 1 || got.Output[0].Type != tc.wantType || got.Usage.TotalTokens == 0 {
			t.Errorf("%q: %+v", tc.prompt, got)
		}
		if tc.wantType == "message" && got.Output[0].Content[0].Text != "not streamed" {
			t.Errorf("%q: text %+v", tc.prompt, got.Output[0].Content)
		}
	}
}

func TestResponsesIDsAreUnique(t *testing.T) {
	srv, c := startServer(t, Options{})
	seen := map[string]bool{}
	for range 3 {
		resp := post(t.Context(), t, c, srv.URL()+"/v1/responses", respBody(true, []string{"exec_command"}, userItem("USE_SHELL")))
		got := foldResponses(t, readSSE(t, resp.Body))
		resp.Body.Close()
		for _, id := range []string{got.ID, got.Output[0].ID, got.Output[0].CallID} {
			if seen[id] {
				t.Errorf("id %q used twice", id)
			}
			seen[id] = true
		}
	}
}
