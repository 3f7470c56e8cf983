package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// Trigger words in the last user text. They are matched as case-sensitive
// substrings; when several appear, the earliest one wins.
const (
	trigShell = "USE_SHELL"           // USE_SHELL [command]: a shell tool call
	trigTool  = "USE_TOOL"            // USE_TOOL <name> <JSON arguments>: a call of that tool
	trigSlow  = "SLOW"                // text streamed in Options.SlowChunks paced chunks
	trigSay   = "SAY "                // SAY <text>: reply exactly <text>
	trigError = fakehttp.ErrorTrigger // ERROR_<ddd>: that HTTP status, OpenAI error body
)

const (
	// maxEcho bounds the prompt or tool output echoed back.
	maxEcho = 200
	// maxTitle bounds a title, as OpenCode's title prompt asks.
	maxTitle = 50
	// DefaultShellCommand is what USE_SHELL runs when no command follows it.
	DefaultShellCommand = "echo hello"
)

// reply is what the fake model answers to one request.
type reply struct {
	status int // HTTP status; anything but 200 is an error reply
	text   string
	// pieces are the text deltas to stream; nil means cut text evenly.
	pieces []string
	// delay paces streamed text deltas (SLOW); zero streams at once.
	delay time.Duration
	// command, when set, is a shell command for the client's shell tool.
	command string
	// call, when set, is a call of a tool the client offers (USE_TOOL).
	call *toolCall
}

// decide picks the reply for one request.
func decide(t turn, opts Options) reply {
	switch {
	case t.toolResult:
		return textReply("tool said: " + clip(strings.TrimSpace(t.output), maxEcho))
	case t.title:
		return textReply(title(t.prompt))
	}
	kw, rest, ok := firstTrigger(t.prompt)
	if !ok {
		return textReply("Hello! You said: " + clip(t.prompt, maxEcho))
	}
	switch kw {
	case trigTool:
		name, args, _ := strings.Cut(strings.TrimSpace(rest), " ")
		if name == "" || !json.Valid([]byte(args)) {
			return textReply("fake: USE_TOOL takes a tool name and JSON arguments")
		}
		return reply{status: http.StatusOK, call: &toolCall{name: name, args: json.RawMessage(strings.TrimSpace(args))}}
	case trigShell:
		cmd := strings.TrimSpace(rest)
		if cmd == "" {
			cmd = DefaultShellCommand
		}
		return reply{status: http.StatusOK, command: cmd}
	case trigSlow:
		return slowReply(opts)
	case trigSay:
		return textReply(strings.TrimSpace(rest))
	default: // trigError; firstTrigger checked the three digits
		code, _ := strconv.Atoi(rest[:3])
		return reply{status: code}
	}
}

// title is a short title from the prompt's first line.
func title(prompt string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return "Empty conversation"
	}
	return clip(line, maxTitle)
}

func textReply(text string) reply {
	return reply{status: http.StatusOK, text: text}
}

func slowReply(opts Options) reply {
	pieces := make([]string, opts.SlowChunks)
	for i := range pieces {
		pieces[i] = fmt.Sprintf(" tick %d", i+1)
	}
	pieces[0] = pieces[0][1:] // "tick 1 tick 2 …", no stray space
	return reply{status: http.StatusOK, text: strings.Join(pieces, ""), pieces: pieces, delay: opts.SlowChunkDelay}
}

// toolCall is a function call the fake model makes.
type toolCall struct {
	name string
	args json.RawMessage
}

// codexShellCall calls the first shell tool the Responses request offers, in
// the argument shape that tool takes; Codex 0.169 offers exec_command.
func codexShellCall(tools []string, cmd string) toolCall {
	name := "exec_command"
	for _, n := range []string{"exec_command", "shell_command", "shell"} {
		if slices.Contains(tools, n) {
			name = n
			break
		}
	}
	var args any
	switch name {
	case "exec_command":
		args = struct {
			Cmd string `json:"cmd"`
		}{cmd}
	case "shell_command":
		args = struct {
			Command string `json:"command"`
		}{cmd}
	default: // shell takes an argv
		args = struct {
			Command []string `json:"command"`
		}{[]string{"bash", "-lc", cmd}}
	}
	return toolCall{name: name, args: mustJSON(args)}
}

// chatShellCall calls OpenCode's bash tool (or a tool named shell, when only
// that is offered).
func chatShellCall(tools []string, cmd string) toolCall {
	name := "bash"
	if !slices.Contains(tools, "bash") && slices.Contains(tools, "shell") {
		name = "shell"
	}
	return toolCall{name: name, args: mustJSON(struct {
		Command     string `json:"command"`
		Description string `json:"description"`
	}{cmd, "Run " + clip(cmd, maxEcho)})}
}

// mustJSON encodes the argument structs above, made of strings only, which
// always encode.
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// errorType is the OpenAI error type the real API uses for a status.
func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// clip cuts s to at most n runes, so the result stays valid UTF-8.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// tokens estimates tokens the way the real API roughly counts: ~4 bytes each.
func tokens(n int) int {
	return max(1, n/4)
}

// firstTrigger finds the earliest trigger in text and the rest of its line.
func firstTrigger(text string) (kw, rest string, ok bool) {
	return fakehttp.FirstTrigger(text, trigTool, trigShell, trigSlow, trigSay, trigError)
}
