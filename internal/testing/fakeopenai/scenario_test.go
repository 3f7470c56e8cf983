package fakeopenai

import (
	"net/http"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	opts := Options{}.withDefaults()
	for _, tc := range []struct {
		name    string
		turn    turn
		text    string
		command string
		status  int
	}{
		{"say", turn{prompt: "SAY hi"}, "hi", "", 200},
		{"say rest of line", turn{prompt: "first SAY  spaced out  \nnext line"}, "spaced out", "", 200},
		{"shell default", turn{prompt: "please USE_SHELL"}, "", DefaultShellCommand, 200},
		{"shell command", turn{prompt: "USE_SHELL printf '%s' x\nmore"}, "", "printf '%s' x", 200},
		{"earliest wins", turn{prompt: "SAY USE_SHELL later"}, "USE_SHELL later", "", 200},
		{"shell before say", turn{prompt: "USE_SHELL SAY x"}, "", "SAY x", 200},
		{"error", turn{prompt: "ERROR_429 please"}, "", "", 429},
		{"error 5xx", turn{prompt: "x ERROR_503"}, "", "", 503},
		{"not an error status", turn{prompt: "ERROR_200 ERROR_99 ERROR_"}, "Hello! You said: ERROR_200 ERROR_99 ERROR_", "", 200},
		{"later real error", turn{prompt: "ERROR_600 then ERROR_404"}, "", "", 404},
		{"echo", turn{prompt: "hi there"}, "Hello! You said: hi there", "", 200},
		{"echo clipped", turn{prompt: strings.Repeat("ü", 250)}, "Hello! You said: " + strings.Repeat("ü", maxEcho), "", 200},
		{"lowercase is no trigger", turn{prompt: "say hi"}, "Hello! You said: say hi", "", 200},
		{"tool result beats triggers", turn{prompt: "ERROR_500", toolResult: true, output: " out \n"}, "tool said: out", "", 200},
		{"empty tool result", turn{toolResult: true}, "tool said: ", "", 200},
		{"title beats triggers", turn{prompt: "USE_SHELL x", title: true}, "USE_SHELL x", "", 200},
		{"title first line", turn{prompt: "line one\nline two", title: true}, "line one", "", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := decide(tc.turn, opts)
			if r.status != tc.status || r.text != tc.text || r.command != tc.command {
				t.Errorf("reply status %d text %q command %q; want %d %q %q", r.status, r.text, r.command, tc.status, tc.text, tc.command)
			}
		})
	}
}

func TestSlowReply(t *testing.T) {
	r := decide(turn{prompt: "go SLOW"}, Options{SlowChunks: 3, SlowChunkDelay: 7}.withDefaults())
	if r.text != "tick 1 tick 2 tick 3" || len(r.pieces) != 3 || r.delay != 7 || r.slowWait() != 14 {
		t.Errorf("slow reply %+v", r)
	}
	if strings.Join(r.textPieces(), "") != r.text {
		t.Errorf("pieces %q do not build %q", r.textPieces(), r.text)
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{
		`"\"say hi\""`:        `"say hi"`,
		`"SAY hi"`:            "SAY hi",
		` "SAY a\nb" `:        "SAY a\nb",
		`"unterminated`:       `"unterminated`,
		`"a" and "b"`:         `"a" and "b"`,
		"plain":               "plain",
		"  spaced  ":          "spaced",
		`"  inner spaces  "`:  "inner spaces",
		`"ERROR_400"`:         "ERROR_400",
		`"USE_SHELL echo hi"`: "USE_SHELL echo hi",
	} {
		if got := unquote(in); got != want {
			t.Errorf("unquote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCommandOutput(t *testing.T) {
	for in, want := range map[string]string{
		"Chunk ID: ab\nWall time: 0.1 seconds\nProcess exited with code 1\nOriginal token count: 2\nOutput:\nboom\n": "\nboom\n",
		"Chunk ID: ab\nProcess running with session ID 3\nOutput:\n":                                                 "\n",
		"Chunk ID: ab\nno output section":                                                                            "Chunk ID: ab\nno output section",
		"Output:\nnot codex's header":                                                                                "Output:\nnot codex's header",
	} {
		if got := commandOutput(in); got != want {
			t.Errorf("commandOutput(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorType(t *testing.T) {
	for status, want := range map[int]string{
		http.StatusBadRequest: "invalid_request_error", http.StatusUnauthorized: "invalid_request_error",
		http.StatusTooManyRequests: "rate_limit_exceeded", http.StatusInternalServerError: "server_error", 529: "server_error",
	} {
		if got := errorType(status); got != want {
			t.Errorf("errorType(%d) = %q, want %q", status, got, want)
		}
	}
}

// USE_TOOL calls the named tool with the JSON that follows; anything but
// JSON gets a text reply that says so.
func TestUseTool(t *testing.T) {
	rep := decide(turn{prompt: `USE_TOOL question {"questions":[{"question":"Which?"}]}`}, Options{})
	if rep.call == nil || rep.call.name != "question" || string(rep.call.args) != `{"questions":[{"question":"Which?"}]}` {
		t.Fatalf("reply %+v", rep)
	}
	if rep := decide(turn{prompt: "USE_TOOL question {not json"}, Options{}); rep.call != nil || !strings.Contains(rep.text, "USE_TOOL") {
		t.Fatalf("bad arguments: %+v", rep)
	}
}
