package fakegemini

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// Trigger words in the last user text; the earliest one wins.
const (
	trigShell = "USE_SHELL" // USE_SHELL [command]: run_shell_command
	trigWrite = "USE_WRITE" // USE_WRITE <path> [text]: write_file
	trigTool  = "USE_TOOL"  // USE_TOOL <name> <JSON arguments>: a call of that tool
	trigSlow  = "SLOW"
	trigSay   = "SAY "
	trigError = fakehttp.ErrorTrigger
)

const (
	// maxEcho bounds the prompt or tool output echoed back.
	maxEcho = 200
	// DefaultShellCommand is what USE_SHELL runs when no command follows.
	DefaultShellCommand = "echo hello"
	// DefaultWriteText is the line USE_WRITE writes when no text follows.
	DefaultWriteText = "hello from the fake model"
	// textPieceRunes is the size of a streamed text chunk.
	textPieceRunes = 8
	// modelVersion is what every reply says answered it.
	modelVersion = "gemini-2.5-pro"
)

// routerAnswer satisfies the CLI's model router (its classifier's JSON
// schema) with a simple task, so it picks a model and goes on.
const routerAnswer = `{"complexity_reasoning":"fake","complexity_score":10,"reasoning":"fake","model_choice":"flash","next_speaker":"user"}`

// reply is what the fake model answers to one request.
type reply struct {
	status int
	pieces []string
	delay  time.Duration
	call   *FunctionCall
}

func textReply(text string) reply {
	return reply{status: http.StatusOK, pieces: fakehttp.Split(text, textPieceRunes)}
}

// decide picks the reply for one request.
func decide(req GenerateRequest, opts Options) reply {
	if last, ok := req.lastPart(); ok && last.FunctionResponse != nil {
		return textReply("tool said: " + clip(toolOutput(last.FunctionResponse), maxEcho))
	}
	prompt := req.prompt()
	kw, rest, ok := fakehttp.FirstTrigger(prompt, trigShell, trigWrite, trigTool, trigSlow, trigSay, trigError)
	if !ok {
		return textReply("Hello! You said: " + clip(prompt, maxEcho))
	}
	rest = strings.TrimSpace(rest)
	switch kw {
	case trigShell:
		cmd := rest
		if cmd == "" {
			cmd = DefaultShellCommand
		}
		return callReply("run_shell_command", map[string]string{"command": cmd, "description": "Run " + cmd})
	case trigWrite:
		path, text, _ := strings.Cut(rest, " ")
		if path == "" {
			return textReply("fake: USE_WRITE takes a path")
		}
		if text = strings.TrimSpace(text); text == "" {
			text = DefaultWriteText
		}
		return callReply("write_file", map[string]string{"file_path": path, "content": text + "\n"})
	case trigTool:
		name, args, _ := strings.Cut(rest, " ")
		if args = strings.TrimSpace(args); args == "" {
			args = "{}"
		}
		if name == "" || !json.Valid([]byte(args)) || args[0] != '{' {
			return textReply("fake: USE_TOOL takes a tool name and a JSON object of arguments")
		}
		return reply{status: http.StatusOK, call: &FunctionCall{Name: name, Args: json.RawMessage(args)}}
	case trigSlow:
		pieces := make([]string, opts.SlowChunks)
		for i := range pieces {
			pieces[i] = fmt.Sprintf(" tick %d", i+1)
		}
		pieces[0] = pieces[0][1:]
		return reply{status: http.StatusOK, pieces: pieces, delay: opts.SlowChunkDelay}
	case trigSay:
		return textReply(rest)
	default: // ERROR_ddd; FirstTrigger checked the digits
		code, _ := strconv.Atoi(rest[:3])
		return reply{status: code}
	}
}

func callReply(name string, args map[string]string) reply {
	b, _ := json.Marshal(args) // a map of strings always encodes
	return reply{status: http.StatusOK, call: &FunctionCall{Name: name, Args: b}}
}

// stream answers streamGenerateContent: one SSE chunk per text piece (or
// one with the call), the last with the finish reason and usage.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, model string, rep reply) {
	if rep.status != http.StatusOK {
		writeError(w, rep.status, fmt.Sprintf("fake: error %d as asked", rep.status))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	chunks := rep.chunks()
	for i, parts := range chunks {
		if i > 0 {
			if fakehttp.Pause(r.Context(), rep.delay) != nil {
				return
			}
		}
		b, _ := json.Marshal(response(parts, i == len(chunks)-1))
		if _, err := fmt.Fprintf(w, "data: %s\r\n\r\n", b); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
	s.opts.Logger.Debug("fakegemini: streamed", "model", model, "chunks", len(chunks))
}

// generate answers generateContent: the router's JSON, or the reply whole.
func (s *Server) generate(w http.ResponseWriter, _ string, req GenerateRequest) {
	if req.wantsJSON() {
		_ = fakehttp.WriteJSON(w, http.StatusOK, response([]map[string]any{{"text": routerAnswer}}, true))
		return
	}
	rep := decide(req, s.opts)
	if rep.status != http.StatusOK {
		writeError(w, rep.status, fmt.Sprintf("fake: error %d as asked", rep.status))
		return
	}
	var parts []map[string]any
	for _, c := range rep.chunks() {
		parts = append(parts, c...)
	}
	_ = fakehttp.WriteJSON(w, http.StatusOK, response(parts, true))
}

// chunks are the reply's parts, one slice per streamed chunk.
func (rep reply) chunks() [][]map[string]any {
	if rep.call != nil {
		return [][]map[string]any{{{"functionCall": map[string]any{"name": rep.call.Name, "args": rep.call.Args}}}}
	}
	out := make([][]map[string]any, 0, len(rep.pieces))
	for _, p := range rep.pieces {
		out = append(out, []map[string]any{{"text": p}})
	}
	return out
}

// response is one GenerateContentResponse; the last one says STOP.
func response(parts []map[string]any, last bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if last {
		cand["finishReason"] = "STOP"
	}
	return map[string]any{
		"candidates":    []any{cand},
		"usageMetadata": map[string]int{"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8},
		"modelVersion":  modelVersion,
	}
}

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
