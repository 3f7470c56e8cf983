package fakeopenai

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestCapturedRequests replays the requests the real CLIs sent to a fake in
// the captured runs (testdata/*.requests.jsonl) and checks each reply: what
// the real CLIs send must reach the right scenario.
func TestCapturedRequests(t *testing.T) {
	want := map[string][]string{
		"codex-exec-say-hi.requests.jsonl": {"text: Hello! You said: say hi"},
		"codex-exec-shell-tool.requests.jsonl": {
			`call exec_command {"cmd":"echo hello"}`,
			"text: tool said: hello",
		},
		"codex-exec-resume.requests.jsonl": {"text: Hello! You said: second turn after resume"},
		"opencode-run-shell-then-resume.requests.jsonl": {
			"text: please USE_SHELL", // the title request
			`call bash {"command":"echo hello","description":"Run echo hello"}`,
			"text: tool said: hello",
			"text: Hello! You said: second turn after resume",
		},
	}
	srv, c := startServer(t, Options{})
	for name, replies := range want {
		t.Run(name, func(t *testing.T) {
			reqs := readCapture(t, name)
			if len(reqs) != len(replies) {
				t.Fatalf("%d captured requests, want %d", len(reqs), len(replies))
			}
			for i, r := range reqs {
				resp := postRaw(t.Context(), t, c, srv.URL()+r.URL, r.Body)
				evs := readSSE(t, resp.Body)
				resp.Body.Close()
				var got string
				if r.URL == "/v1/responses" {
					res := foldResponses(t, evs)
					switch it := res.Output[0]; it.Type {
					case "function_call":
						got = fmt.Sprintf("call %s %s", it.Name, it.Arguments)
					default:
						got = "text: " + res.text
					}
				} else {
					ch := foldChat(t, evs)
					if ch.toolName != "" {
						got = fmt.Sprintf("call %s %s", ch.toolName, ch.toolArgs)
					} else {
						got = "text: " + ch.text
					}
				}
				if got != replies[i] {
					t.Errorf("request %d: reply %q, want %q", i, got, replies[i])
				}
			}
		})
	}
}

// TestCapturedRequestsParse checks the fake reads the captured requests as
// the CLIs meant them: the prompt, the tools, the last input's kind.
func TestCapturedRequestsParse(t *testing.T) {
	reqs := readCapture(t, "codex-exec-shell-tool.requests.jsonl")
	var first, second responsesRequest
	if err := json.Unmarshal(reqs[0].Body, &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(reqs[1].Body, &second); err != nil {
		t.Fatal(err)
	}
	t1, t2 := first.turn(), second.turn()
	if t1.prompt != "please USE_SHELL" || t1.toolResult || len(t1.tools) == 0 || t1.tools[0] != "exec_command" || !first.Stream {
		t.Errorf("first turn %+v", t1)
	}
	if !t2.toolResult || t2.output != "\nhello\n" || t2.prompt != "please USE_SHELL" {
		t.Errorf("second turn %+v", t2)
	}

	oc := readCapture(t, "opencode-run-shell-then-resume.requests.jsonl")
	var title, agent chatRequest
	if err := json.Unmarshal(oc[0].Body, &title); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(oc[1].Body, &agent); err != nil {
		t.Fatal(err)
	}
	if tt := title.turn(); !tt.title || tt.prompt != "please USE_SHELL" || !title.StreamOptions.IncludeUsage {
		t.Errorf("title turn %+v", tt)
	}
	if at := agent.turn(); at.title || at.prompt != "please USE_SHELL" || at.tools[0] != "bash" {
		t.Errorf("agent turn %+v", at)
	}
}
