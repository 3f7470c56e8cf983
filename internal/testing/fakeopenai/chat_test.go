package fakeopenai

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func streamChat(t *testing.T, body map[string]any) outChat {
	t.Helper()
	srv, c := startServer(t, Options{})
	resp := post(t.Context(), t, c, srv.URL()+"/v1/chat/completions", body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := readSSE(t, resp.Body)
	for _, e := range evs {
		if e.name != "" {
			t.Fatalf("chat stream names an event %q", e.name)
		}
	}
	return foldChat(t, evs)
}

func TestChatTextStream(t *testing.T) {
	// OpenCode sends the user's text JSON-quoted.
	got := streamChat(t, chatBody(true, []string{"bash"}, chatMsg("system", "You are opencode"), chatMsg("user", `"SAY hello from the fake"`)))
	if got.text != "hello from the fake" || got.finishReason != "stop" || !got.done || got.toolName != "" {
		t.Errorf("reply %+v", got)
	}
	// role chunk, 3 text chunks, finish chunk, usage chunk
	if got.chunks != 6 {
		t.Errorf("%d chunks, want 6", got.chunks)
	}
	if got.usage == nil || got.usage.PromptTokens < 1 || got.usage.CompletionTokens < 1 || got.usage.TotalTokens != got.usage.PromptTokens+got.usage.CompletionTokens {
		t.Errorf("usage %+v", got.usage)
	}
}

func TestChatUsageOnlyWhenAsked(t *testing.T) {
	body := chatBody(true, nil, chatMsg("user", "SAY x"))
	delete(body, "stream_options")
	if got := streamChat(t, body); got.usage != nil || got.text != "x" || !got.done {
		t.Errorf("reply %+v", got)
	}
}

func TestChatShellCall(t *testing.T) {
	for _, tc := range []struct {
		name, prompt string
		tools        []string
		wantName     string
		wantCommand  string
	}{
		{"default", `"please USE_SHELL"`, []string{"bash", "edit", "read"}, "bash", "echo hello"},
		{"command", `"USE_SHELL ls -la"`, []string{"read", "bash"}, "bash", "ls -la"},
		{"shell only", "USE_SHELL pwd", []string{"shell"}, "shell", "pwd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := streamChat(t, chatBody(true, tc.tools, chatMsg("user", tc.prompt)))
			var args struct{ Command, Description string }
			if err := json.Unmarshal([]byte(got.toolArgs), &args); err != nil {
				t.Fatalf("arguments %q: %v", got.toolArgs, err)
			}
			if got.toolName != tc.wantName || args.Command != tc.wantCommand || args.Description == "" ||
				!strings.HasPrefix(got.toolID, "call_fake_") || got.finishReason != "tool_calls" || got.text != "" {
				t.Errorf("reply %+v, arguments %+v", got, args)
			}
		})
	}
}

func TestChatToolResult(t *testing.T) {
	call := map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{
		"id": "call_1", "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"echo hello"}`},
	}}}
	tool := map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "hello\n"}
	got := streamChat(t, chatBody(true, []string{"bash"}, chatMsg("user", `"USE_SHELL"`), call, tool))
	if got.text != "tool said: hello" || got.finishReason != "stop" {
		t.Errorf("reply %+v", got)
	}
}

func TestChatTitleRequest(t *testing.T) {
	// The title request has no tools; its prompt's triggers are not obeyed.
	sys := chatMsg("system", "You are a title generator. You output ONLY a thread title.")
	for _, tc := range []struct{ prompt, want string }{
		{`"USE_SHELL echo hi"`, "USE_SHELL echo hi"},
		{`"ERROR_500"`, "ERROR_500"},
		{`""`, "Empty conversation"},
		{`"` + strings.Repeat("x", 80) + `"`, strings.Repeat("x", maxTitle)},
	} {
		got := streamChat(t, chatBody(true, nil, sys, chatMsg("user", "Generate a title for this conversation:\n"), chatMsg("user", tc.prompt)))
		if got.text != tc.want || got.toolName != "" {
			t.Errorf("%s: title %q, want %q", tc.prompt, got.text, tc.want)
		}
	}
}

func TestChatJSON(t *testing.T) {
	srv, c := startServer(t, Options{})
	type completion struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	decode := func(prompt string) completion {
		resp := post(t.Context(), t, c, srv.URL()+"/v1/chat/completions", chatBody(false, []string{"bash"}, chatMsg("user", prompt)))
		defer resp.Body.Close()
		var got completion
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%q: status %d, %v", prompt, resp.StatusCode, err)
		}
		if got.Object != "chat.completion" || len(got.Choices) != 1 || got.Usage.TotalTokens == 0 {
			t.Fatalf("%q: %+v", prompt, got)
		}
		return got
	}
	text := decode("SAY plain json").Choices[0]
	if text.Message.Role != "assistant" || text.Message.Content == nil || *text.Message.Content != "plain json" || text.FinishReason != "stop" {
		t.Errorf("text reply %+v", text)
	}
	call := decode("USE_SHELL").Choices[0]
	if call.Message.Content != nil || len(call.Message.ToolCalls) != 1 || call.Message.ToolCalls[0].Function.Name != "bash" ||
		!strings.Contains(call.Message.ToolCalls[0].Function.Arguments, `"command":"echo hello"`) || call.FinishReason != "tool_calls" {
		t.Errorf("call reply %+v", call)
	}
}
