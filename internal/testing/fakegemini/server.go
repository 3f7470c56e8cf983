// Package fakegemini owns a fake Gemini API server for tests. It listens on
// loopback only, scripts every reply from trigger words in the last user
// text, streams it as the real API does (server-sent events), and records
// each request, so the real Gemini CLI (pointed at it by
// GOOGLE_GEMINI_BASE_URL) runs offline and deterministically.
//
// Endpoints: POST /v1beta/models/{model}:streamGenerateContent (SSE),
// POST /v1beta/models/{model}:generateContent (JSON),
// POST /v1beta/models/{model}:countTokens, GET /v1beta/models, and a JSON
// 404 elsewhere.
//
// The reply to a request is, in this order:
//
//   - when its last part is a function's response: "tool said: <output>"
//     (the shell's "Output:" text, the tool's error, or a response of
//     another shape as it came), at most 200 runes;
//   - for a request that asks for JSON (responseMimeType application/json:
//     the CLI's model router): a JSON object that routes to the default
//     model, so a prompt's scenario plays once, in the agent's request;
//   - otherwise the earliest trigger in the last user text, or
//     "Hello! You said: <prompt, at most 200 runes>" when there is none.
//
// Triggers, case-sensitive:
//
//   - SAY <text>: exactly <text>, the rest of that line
//   - USE_SHELL [command]: a call of run_shell_command (DefaultShellCommand
//     when none follows)
//   - USE_WRITE <path> [text]: a call of write_file writing the line [text]
//     (DefaultWriteText when none) to <path>
//   - USE_TOOL <name> <JSON object>: a call of that tool (an MCP server's,
//     say) with those arguments
//   - SLOW: text in Options.SlowChunks chunks, Options.SlowChunkDelay apart
//   - ERROR_<4xx|5xx>: that status with a Google API error body
package fakegemini

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// Options tunes a Server. The zero value is ready to use.
type Options struct {
	// SlowChunkDelay is the pause between streamed chunks in SLOW replies.
	// Default 200ms.
	SlowChunkDelay time.Duration
	// SlowChunks is the number of text chunks in SLOW replies. Default 30.
	SlowChunks int
	// Logger gets one debug line per request; nil discards.
	Logger *slog.Logger
}

const (
	defaultSlowChunkDelay = 200 * time.Millisecond
	defaultSlowChunks     = 30
	// maxBodyBytes bounds a request body; the CLI sends about 40 KB a turn.
	maxBodyBytes = 32 << 20
)

func (o Options) withDefaults() Options {
	if o.SlowChunkDelay <= 0 {
		o.SlowChunkDelay = defaultSlowChunkDelay
	}
	if o.SlowChunks <= 0 {
		o.SlowChunks = defaultSlowChunks
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Request is one request the server received; every header is kept.
type Request = fakehttp.Request

// Server is a running fake Gemini API. Close it when done.
type Server struct {
	*fakehttp.Server
	opts Options
}

// Start listens on a free loopback port and serves until Close. URL() is
// the base URL clients take (GOOGLE_GEMINI_BASE_URL).
func Start(opts Options) (*Server, error) {
	s := &Server{opts: opts.withDefaults()}
	var err error
	s.Server, err = fakehttp.Start(s.routes(), fakehttp.Options{Name: "fakegemini", MaxBody: maxBodyBytes,
		BodyError: func(w http.ResponseWriter, err error) { writeError(w, http.StatusBadRequest, err.Error()) },
		Logger:    s.opts.Logger})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// routes dispatches on the method after the model's name
// ("models/gemini-2.5-pro:streamGenerateContent").
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1beta/models", handleModels)
	mux.HandleFunc("POST /v1beta/models/{call}", s.handleModelCall)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("fake: no route %s %s", r.Method, r.URL.Path))
	})
	return mux
}

func (s *Server) handleModelCall(w http.ResponseWriter, r *http.Request) {
	model, method, ok := strings.Cut(r.PathValue("call"), ":")
	if !ok || model == "" {
		writeError(w, http.StatusNotFound, "fake: want models/{model}:{method}")
		return
	}
	req, err := ParseRequest(fakehttp.BodyOf(r))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	switch method {
	case "streamGenerateContent":
		s.stream(w, r, model, decide(req, s.opts))
	case "generateContent":
		s.generate(w, model, req)
	case "countTokens":
		_ = fakehttp.WriteJSON(w, http.StatusOK, map[string]any{"totalTokens": req.tokens()})
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("fake: no method %q", method))
	}
}

func handleModels(w http.ResponseWriter, _ *http.Request) {
	_ = fakehttp.WriteJSON(w, http.StatusOK, map[string]any{"models": []map[string]any{
		{"name": "models/gemini-2.5-pro"}, {"name": "models/gemini-2.5-flash"},
	}})
}

// writeError answers in the Google API's error shape.
func writeError(w http.ResponseWriter, status int, msg string) {
	_ = fakehttp.WriteJSON(w, status, map[string]any{"error": map[string]any{
		"code": status, "message": msg, "status": http.StatusText(status),
	}})
}

// Images are the inline images of the user turns of every request
// received, each once, in the order they first came.
func (s *Server) Images() []fakehttp.Image {
	var out []fakehttp.Image
	for _, r := range s.Requests() {
		req, err := ParseRequest(r.Body)
		if err != nil {
			continue
		}
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if c.Role != "user" || p.InlineData == nil {
					continue
				}
				if img, ok := fakehttp.Base64Image(p.InlineData.MIMEType, p.InlineData.Data); ok {
					out = fakehttp.AddImage(out, img)
				}
			}
		}
	}
	return out
}
