// Package fakeopenai owns a fake OpenAI API server for tests. It listens on
// loopback only, scripts every reply from trigger words in the last user
// message, streams it as the real API does, and records each request, so the
// real Codex CLI (Responses API) and OpenCode CLI (Chat Completions, through
// @ai-sdk/openai-compatible) can run offline and deterministically against it.
//
// Endpoints: POST /v1/responses (SSE, or JSON when stream is false),
// POST /v1/chat/completions (SSE when stream is true, else JSON),
// GET /v1/models[/{id}], and a JSON 404 elsewhere.
//
// The reply to a request is, in this order:
//
//   - when its last input is a tool's result (function_call_output, a "tool"
//     message): "tool said: <output, trimmed, at most 200 runes>". Codex puts
//     a header (chunk id, wall time, exit code) before a command's output;
//     only what follows its "Output:" line is echoed, so replies do not vary.
//   - for OpenCode's title request (no tools, a "title generator" system
//     prompt): the prompt's first line, at most 50 runes; triggers are not
//     obeyed, so a prompt's scenario plays once, in the agent's request.
//   - otherwise the earliest trigger in the last user text (see below), or
//     "Hello! You said: <prompt, at most 200 runes>" when there is none.
//
// Triggers, case-sensitive:
//
//   - SAY <text>: exactly <text>, the rest of that line
//   - USE_SHELL [command]: a call of the client's shell tool running the
//     command (DefaultShellCommand when none follows): exec_command {"cmd"}
//     for Codex, bash {"command","description"} for OpenCode
//   - USE_TOOL <name> <JSON arguments>: a call of the client's tool <name>
//     (a function tool) with those arguments, the rest of the line:
//     OpenCode's question tool, say; <namespace>/<name> calls the function
//     <name> of a namespace tool (Responses API: Codex's MCP servers)
//   - SLOW: text in Options.SlowChunks deltas, Options.SlowChunkDelay apart
//   - ERROR_<4xx|5xx>: that status with an OpenAI error body
//   - USE_PATCH <path> [text] (Responses only, and before the triggers
//     above): a call of Codex's apply_patch tool adding the file <path>
//     that holds the line [text] (see patch.go)
//
// OpenCode sends the user's text JSON-quoted ("\"say hi\""); a prompt that is
// one JSON string is read as the string it holds.
package fakeopenai

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// Options tunes a Server. The zero value is ready to use.
type Options struct {
	// SlowChunkDelay is the pause between streamed chunks in SLOW replies;
	// tests may shrink it. Default 200ms.
	SlowChunkDelay time.Duration
	// SlowChunks is the number of text chunks in SLOW replies. Default 30.
	SlowChunks int
	// Logger gets one debug line per request; nil discards.
	Logger *slog.Logger
}

const (
	defaultSlowChunkDelay = 200 * time.Millisecond
	defaultSlowChunks     = 30
	// maxBodyBytes bounds a request body; Codex sends about 40 KB a turn,
	// growing with the history.
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

// Server is a running fake OpenAI API. Close it when done.
type Server struct {
	*fakehttp.Server
	opts Options
	// seq numbers replies and tool calls, so ids are unique per server.
	seq atomic.Int64
}

// Start listens on a free loopback port and serves until Close. URL() is
// the server's root; clients want URL()+"/v1" as their base URL.
func Start(opts Options) (*Server, error) {
	s := &Server{opts: opts.withDefaults()}
	var err error
	s.Server, err = fakehttp.Start(s.routes(), fakehttp.Options{Name: "fakeopenai", MaxBody: maxBodyBytes,
		BodyError: writeBodyError, Logger: s.opts.Logger})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// routes dispatches; the body has been read and recorded already.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.handleResponses)
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("GET /v1/models", handleModels)
	mux.HandleFunc("GET /v1/models/{id}", handleModel)
	mux.HandleFunc("/", handleNotFound)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Bodies are read as plain JSON; a compressed one would only look
		// like bad JSON, so say what is wrong instead.
		if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
			writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("fake: Content-Encoding %q is not supported", enc))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// bodyOf is the body the server read for r.
func bodyOf(r *http.Request) []byte { return fakehttp.BodyOf(r) }

// next is the next sequence number for reply and call ids.
func (s *Server) next() int64 {
	return s.seq.Add(1)
}
