package fakeanthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// Trigger words in the last user message's prompt. They are matched as
// case-sensitive substrings; when several appear, the earliest one wins.
const (
	trigBash  = "USE_BASH"            // Bash tool_use running `echo hello`
	trigWrite = "USE_WRITE"           // USE_WRITE <path>: Write tool_use of a fixed text
	trigTool  = "USE_TOOL"            // USE_TOOL <name> <json-object>: any tool_use
	trigSlow  = "SLOW"                // text streamed in Options.SlowChunks paced chunks
	trigSay   = "SAY "                // SAY <text>: reply exactly <text>
	trigError = fakehttp.ErrorTrigger // ERROR_<ddd>: that HTTP status, Anthropic error body
)

const (
	// maxEcho bounds the prompt or tool output echoed back.
	maxEcho = 200
	// WriteContent is what the USE_WRITE scenario asks the Write tool to write.
	WriteContent = "hello from the fake model\n"
)

// reply is what the fake model answers to one Messages request.
type reply struct {
	status     int    // HTTP status; anything but 200 is an error reply
	errType    string // Anthropic error type of an error reply
	blocks     []block
	stopReason string
	// delay paces streamed text deltas (SLOW); zero streams at once.
	delay time.Duration
}

// block is one output content block: "text" or "tool_use".
type block struct {
	kind string
	text string
	// pieces are the text deltas to stream; nil means cut text evenly.
	pieces   []string
	id, name string
	input    json.RawMessage
}

// decide picks the reply for a Messages request: a tool_result in the last
// user message is echoed back, otherwise the earliest trigger in its prompt
// chooses, and a prompt without one is echoed.
func decide(req *messagesRequest, opts Options, toolID func() string) reply {
	last := req.lastUser()
	if out, ok := last.toolResults(); ok {
		return textReply("tool said: " + clip(strings.TrimSpace(out), maxEcho))
	}
	prompt := last.prompt()
	kw, rest, ok := firstTrigger(prompt)
	if !ok {
		return textReply("Hello! You said: " + clip(prompt, maxEcho))
	}
	switch kw {
	case trigBash:
		return toolReply(toolID(), "Bash", json.RawMessage(`{"command":"echo hello","description":"Print hello"}`))
	case trigWrite:
		return writeReply(toolID(), rest)
	case trigTool:
		return anyToolReply(toolID, rest)
	case trigSlow:
		return slowReply(opts)
	case trigSay:
		return textReply(strings.TrimSpace(rest))
	default: // trigError; firstTrigger checked the three digits
		code, _ := strconv.Atoi(rest[:3])
		return reply{status: code, errType: errorType(code)}
	}
}

func textReply(text string) reply {
	return reply{status: 200, stopReason: "end_turn", blocks: []block{{kind: "text", text: text}}}
}

func toolReply(id, name string, input json.RawMessage) reply {
	return reply{status: 200, stopReason: "tool_use", blocks: []block{{kind: "tool_use", id: id, name: name, input: input}}}
}

func writeReply(id, rest string) reply {
	path := "hello.txt"
	if f := strings.Fields(rest); len(f) > 0 {
		path = f[0]
	}
	input, err := json.Marshal(struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
	}{path, WriteContent})
	if err != nil { // cannot happen for two strings
		return textReply(fmt.Sprintf("fake: encode Write input: %v", err))
	}
	return toolReply(id, "Write", input)
}

// anyToolReply serves USE_TOOL <name> <json-object>. A malformed line gets
// a text reply naming the problem, which shows up in the test's output.
func anyToolReply(toolID func() string, rest string) reply {
	rest = strings.TrimSpace(rest)
	name, args, _ := strings.Cut(rest, " ")
	if name == "" {
		return textReply("fake: USE_TOOL needs a tool name")
	}
	args = strings.TrimSpace(args)
	if args == "" {
		args = "{}"
	}
	var input bytes.Buffer
	if err := json.Compact(&input, []byte(args)); err != nil || input.Bytes()[0] != '{' {
		return textReply(fmt.Sprintf("fake: USE_TOOL %s: input is not a JSON object: %s", name, args))
	}
	return toolReply(toolID(), name, input.Bytes())
}

func slowReply(opts Options) reply {
	pieces := make([]string, opts.SlowChunks)
	for i := range pieces {
		pieces[i] = fmt.Sprintf(" tick %d", i+1)
	}
	pieces[0] = pieces[0][1:] // "tick 1 tick 2 …", no stray space
	r := textReply(strings.Join(pieces, ""))
	r.blocks[0].pieces = pieces
	r.delay = opts.SlowChunkDelay
	return r
}

// errorType is the Anthropic error type the real API uses for a status.
func errorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

// clip cuts s to at most n runes, so the result stays valid UTF-8.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// firstTrigger finds the earliest trigger in text and the rest of its line.
func firstTrigger(text string) (kw, rest string, ok bool) {
	return fakehttp.FirstTrigger(text, trigBash, trigWrite, trigTool, trigSlow, trigSay, trigError)
}
