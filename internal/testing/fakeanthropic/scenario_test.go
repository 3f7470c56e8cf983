package fakeanthropic

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

type scenarioCase struct {
	name    string
	content any // content of the last user message
	stop    string
	want    []outBlock // IDs are not compared
}

func textOut(s string) []outBlock { return []outBlock{{Type: "text", Text: s}} }

func toolOut(name, input string) []outBlock {
	return []outBlock{{Type: "tool_use", Name: name, Input: json.RawMessage(input)}}
}

func scenarioCases() []scenarioCase {
	reminder := "<system-reminder>\nToday is a day. Do not SAY this.\n</system-reminder>\n\n"
	return []scenarioCase{
		{"echo string content", "say hi", "end_turn", textOut("Hello! You said: say hi")},
		{"echo drops system reminders", textBlocks(reminder, "say hi"), "end_turn", textOut("Hello! You said: say hi")},
		{"echo clipped to 200 runes", strings.Repeat("é", 300), "end_turn", textOut("Hello! You said: " + strings.Repeat("é", 200))},
		{"SAY", textBlocks(reminder, "SAY hi there\nand more"), "end_turn", textOut("hi there")},
		{"USE_BASH", textBlocks("please USE_BASH now"), "tool_use",
			toolOut("Bash", `{"command":"echo hello","description":"Print hello"}`)},
		{"USE_WRITE", "USE_WRITE /tmp/x/hello.txt please", "tool_use",
			toolOut("Write", `{"file_path":"/tmp/x/hello.txt","content":"hello from the fake model\n"}`)},
		{"USE_TOOL mcp", `call USE_TOOL mcp__calc__add {"a":2, "b":3}`, "tool_use",
			toolOut("mcp__calc__add", `{"a":2,"b":3}`)},
		{"USE_TOOL no input", "USE_TOOL Glob", "tool_use", toolOut("Glob", `{}`)},
		{"USE_TOOL bad input", "USE_TOOL Glob [1]", "end_turn",
			textOut("fake: USE_TOOL Glob: input is not a JSON object: [1]")},
		{"earliest trigger wins", "SAY do not USE_BASH", "end_turn", textOut("do not USE_BASH")},
		{"ERROR_ without a status is no trigger", "ERROR_12x and ERROR_200", "end_turn",
			textOut("Hello! You said: ERROR_12x and ERROR_200")},
		{"tool_result string", []any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_fake_1", "content": "  hello\n\n<system-reminder>\n<total_tokens>9 tokens left</total_tokens>\n</system-reminder>"},
			map[string]any{"type": "text", "text": reminder},
		}, "end_turn", textOut("tool said: hello")},
		{"tool_result error blocks", []any{map[string]any{
			"type": "tool_result", "tool_use_id": "toolu_fake_1", "is_error": true,
			"content": textBlocks("Permission denied"),
		}}, "end_turn", textOut("tool said: Permission denied")},
		{"tool_result clipped", []any{map[string]any{
			"type": "tool_result", "tool_use_id": "t", "content": strings.Repeat("x", 500),
		}}, "end_turn", textOut("tool said: " + strings.Repeat("x", 200))},
	}
}

func checkReply(t *testing.T, got outMessage, tc scenarioCase) {
	t.Helper()
	if !strings.HasPrefix(got.ID, "msg_fake_") || got.Model != "claude-test-model" {
		t.Errorf("id %q model %q", got.ID, got.Model)
	}
	if got.StopReason != tc.stop {
		t.Errorf("stop_reason %q, want %q", got.StopReason, tc.stop)
	}
	if got.Usage.InputTokens < 1 || got.Usage.OutputTokens < 1 {
		t.Errorf("usage %+v", got.Usage)
	}
	if len(got.Content) != len(tc.want) {
		t.Fatalf("content %+v, want %+v", got.Content, tc.want)
	}
	for i, w := range tc.want {
		g := got.Content[i]
		if g.Type != w.Type || g.Text != w.Text || g.Name != w.Name {
			t.Errorf("block %d = %+v, want %+v", i, g, w)
		}
		if w.Type == "tool_use" {
			if !strings.HasPrefix(g.ID, "toolu_fake_") {
				t.Errorf("tool id %q", g.ID)
			}
			if !jsonEqual(t, g.Input, w.Input) {
				t.Errorf("tool input %s, want %s", g.Input, w.Input)
			}
		}
	}
}

func TestScenariosStreaming(t *testing.T) {
	srv, c := startServer(t, Options{})
	for _, tc := range scenarioCases() {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t.Context(), t, c, srv.URL()+"/v1/messages?beta=true", msgBody(true, tc.content))
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			evs := readSSE(t, resp.Body)
			checkEventOrder(t, eventNames(evs))
			got := assemble(t, evs)
			checkReply(t, got, tc)
			inPieces := tc.want[0].Type == "tool_use" || utf8.RuneCountInString(tc.want[0].Text) > textPieceRunes
			if inPieces && got.deltas < 2 {
				t.Errorf("only %d deltas; content should arrive in pieces", got.deltas)
			}
		})
	}
}

// checkEventOrder asserts the real API's sequence: message_start, ping, then
// for each block start, one or more deltas, stop; message_delta, message_stop.
func checkEventOrder(t *testing.T, names []string) {
	t.Helper()
	const head, tail = 2, 2
	if len(names) < head+3+tail ||
		!slices.Equal(names[:head], []string{"message_start", "ping"}) ||
		!slices.Equal(names[len(names)-tail:], []string{"message_delta", "message_stop"}) {
		t.Fatalf("events %v", names)
	}
	state := "content_block_stop"
	for _, n := range names[head : len(names)-tail] {
		ok := n == "content_block_start" && state == "content_block_stop" ||
			n == "content_block_delta" && state != "content_block_stop" ||
			n == "content_block_stop" && state == "content_block_delta"
		if !ok {
			t.Fatalf("%s after %s in %v", n, state, names)
		}
		state = n
	}
	if state != "content_block_stop" {
		t.Fatalf("last block not stopped: %v", names)
	}
}

func TestScenariosJSON(t *testing.T) {
	srv, c := startServer(t, Options{})
	for _, tc := range scenarioCases() {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t.Context(), t, c, srv.URL()+"/v1/messages", msgBody(false, tc.content))
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			var got outMessage
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatalf("decode: %v", err)
			}
			checkReply(t, got, tc)
		})
	}
}

func TestIDsCount(t *testing.T) {
	srv, c := startServer(t, Options{})
	var ids []string
	for range 2 {
		resp := post(t.Context(), t, c, srv.URL()+"/v1/messages", msgBody(false, "USE_BASH"))
		var m outMessage
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("decode: %v", err)
		}
		resp.Body.Close()
		ids = append(ids, m.ID, m.Content[0].ID)
	}
	want := []string{"msg_fake_1", "toolu_fake_1", "msg_fake_2", "toolu_fake_2"}
	if !slices.Equal(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
}

func TestErrorTriggers(t *testing.T) {
	srv, c := startServer(t, Options{})
	for _, tc := range []struct {
		prompt  string
		status  int
		errType string
	}{
		{"ERROR_400", 400, "invalid_request_error"},
		{"please fail with ERROR_500 now", 500, "api_error"},
		{"ERROR_529", 529, "overloaded_error"},
		{"ERROR_429", 429, "rate_limit_error"},
		{"ERROR_503", 503, "api_error"},
	} {
		for _, stream := range []bool{true, false} {
			resp := post(t.Context(), t, c, srv.URL()+"/v1/messages?beta=true", msgBody(stream, tc.prompt))
			var body struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			err := json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("%s: decode: %v", tc.prompt, err)
			}
			if resp.StatusCode != tc.status || body.Type != "error" || body.Error.Type != tc.errType || body.Error.Message == "" {
				t.Errorf("%s (stream %v): status %d body %+v", tc.prompt, stream, resp.StatusCode, body)
			}
		}
	}
}

func TestMalformedBody(t *testing.T) {
	srv, c := startServer(t, Options{})
	resp := post(t.Context(), t, c, srv.URL()+"/v1/messages", map[string]any{"messages": "nope"})
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "invalid_request_error") {
		t.Errorf("status %d body %s", resp.StatusCode, b)
	}
}

func TestUnitHelpers(t *testing.T) {
	if got := stripReminders("a<system-reminder>x</system-reminder>b<system-reminder>open"); got != "ab" {
		t.Errorf("stripReminders = %q", got)
	}
	if kw, rest, ok := firstTrigger("x ERROR_5 ERROR_404 SLOW"); !ok || kw != trigError || rest != "404 SLOW" {
		t.Errorf("firstTrigger = %q %q %v", kw, rest, ok)
	}
}
