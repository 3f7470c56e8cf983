package runview

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

func parse(t *testing.T, line string) claude.Message {
	t.Helper()
	m, err := cc.Parse([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestToolSummary(t *testing.T) {
	for _, c := range []struct{ name, input, want string }{
		{"Write", `{"file_path":"/srv/project/hello.txt","content":"hi"}`, "Write hello.txt"},
		{"Read", `{"file_path":"/etc/passwd"}`, "Read /etc/passwd"},
		{"Edit", `{"file_path":"src/a.go"}`, "Edit src/a.go"},
		{"Bash", `{"command":"echo hello"}`, "Bash: echo hello"},
		{"Bash", `{"command":"set -e\nmake test"}`, "Bash: set -e …"},
		{"Grep", `{"pattern":"func main","path":"."}`, "Grep: func main"},
		{"WebFetch", `{"url":"https://example.com","prompt":"x"}`, "WebFetch: https://example.com"},
		{"TodoWrite", `{"todos":[]}`, "TodoWrite"},
		{"Odd", `not json`, "Odd"},
		{"Bash", `{"command":"` + strings.Repeat("x", 200) + `"}`, "Bash: " + strings.Repeat("x", 79) + "…"},
	} {
		if got := toolSummary(c.name, json.RawMessage(c.input), "/srv/project"); got != c.want {
			t.Errorf("toolSummary(%s, %s) = %q, want %q", c.name, c.input, got, c.want)
		}
	}
}

func TestFormats(t *testing.T) {
	for got, want := range map[string]string{
		tokens(340): "340", tokens(1234): "1.2k", tokens(12000): "12k", tokens(3_400_000): "3.4M",
		cost(0.00123): "$0.0012", cost(12.345): "$12.35",
		duration(3400 * time.Millisecond): "3.4s", duration(125 * time.Second): "2m05s",
		plural(1, "turn"): "1 turn", plural(2, "turn"): "2 turns",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestErrorResultSummaryAndExitCode(t *testing.T) {
	res := parse(t, `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,"errors":["Reached maximum number of turns (3)"],"session_id":"s-1","total_cost_usd":0.5,"usage":{"input_tokens":200,"cache_read_input_tokens":1000,"output_tokens":340}}`).(*claude.ResultMessage)
	want := "✗ error_max_turns: Reached maximum number of turns (3) · 3 turns · 1.2k in / 340 out · $0.5000 · 2.0s · session s-1"
	if got := summaryLine(res, false, 2*time.Second, style{}); got != want {
		t.Errorf("summary\n got %q\nwant %q", got, want)
	}
	if exitFor(res) != ExitFailed {
		t.Errorf("exit code %d for an error result", exitFor(res))
	}
	if got := summaryLine(res, true, time.Second, style{}); !strings.HasPrefix(got, "⏹ interrupted · 3 turns") {
		t.Errorf("interrupted summary %q", got)
	}
}

// render shows lines through a humanView and returns what it printed.
func render(t *testing.T, msgs ...string) string {
	t.Helper()
	var out strings.Builder
	v := newHumanView(newScreen(&out, &out, false, false), style{}, "/w", nil)
	for _, l := range msgs {
		v.message(parse(t, l))
	}
	return out.String()
}

const (
	assistantText = `{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Hello there."}]},"parent_tool_use_id":null}`
	delta         = `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello "}},"parent_tool_use_id":null}`
	delta2        = `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"there."}},"parent_tool_use_id":null}`
	blockStop     = `{"type":"stream_event","event":{"type":"content_block_stop","index":0},"parent_tool_use_id":null}`
	toolUse       = `{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},"parent_tool_use_id":null}`
	toolErr       = `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"<tool_use_error>no such file</tool_use_error>"}]},"parent_tool_use_id":null}`
	toolOK        = `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.go\nb.go\nc.go"}]}]},"parent_tool_use_id":null}`
	subTool       = `{"type":"assistant","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"sub text"},{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/w/a.go"}}]},"parent_tool_use_id":"t0"}`
)

func TestWholeTextWithoutDeltas(t *testing.T) {
	if got, want := render(t, assistantText, toolUse, toolOK), "Hello there.\n\n⏺ Bash: ls\n  ⎿ a.go … +2 lines\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDeltasAreNotRepeated(t *testing.T) {
	if got, want := render(t, delta, delta2, assistantText, blockStop, toolUse, toolErr), "Hello there.\n\n⏺ Bash: ls\n  ⎿ error: no such file\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSubagentShowsOnlyToolLines(t *testing.T) {
	if got, want := render(t, subTool), "  ⏺ Read a.go\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// An API error's result says subtype "success": the summary names the
// API error and its status instead.
func TestAPIErrorSummary(t *testing.T) {
	res := parse(t, `{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"API Error: 529 Overloaded","api_error_status":529,"session_id":"s-1","usage":{}}`).(*claude.ResultMessage)
	got := summaryLine(res, false, time.Second, style{})
	if want := "✗ API error 529: Overloaded · 1 turn"; !strings.HasPrefix(got, want) {
		t.Errorf("summary\n got %q\nwant %q…", got, want)
	}
}
