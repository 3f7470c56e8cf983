// Package fakeanthropic owns a fake Anthropic Messages API server for tests.
// It listens on loopback only, scripts every reply from trigger words in the
// last user message, streams it as the real API does, and records each
// request, so the real claude CLI can run offline and deterministically
// against it via ANTHROPIC_BASE_URL.
//
// Replies to POST /v1/messages (streaming or not), from the text of the last
// user message with the CLI's <system-reminder> sections removed:
//
//   - a tool_result block: "tool said: <its text, trimmed, at most 200 runes>"
//   - USE_BASH: a Bash tool_use running `echo hello`
//   - USE_WRITE <path>: a Write tool_use writing WriteContent to <path>
//   - USE_TOOL <name> <json-object>: a tool_use of any tool with that input
//   - SLOW: text in Options.SlowChunks deltas, Options.SlowChunkDelay apart
//   - SAY <text>: exactly <text>, the rest of that line
//   - ERROR_<4xx|5xx>: that status with an Anthropic error body
//   - anything else: "Hello! You said: <prompt, at most 200 runes>"
//
// Triggers are case-sensitive substrings; the earliest one wins. The server
// also answers POST /v1/messages/count_tokens, GET /v1/models[/{id}], and a
// JSON 404 elsewhere (including the HEAD / preflight of some CLI versions).
package fakeanthropic

import (
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// Options tunes a Server. The zero value is ready to use.
type Options struct {
	// Delay between streamed chunks in SLOW scenarios; tests may shrink it. Default 200ms.
	SlowChunkDelay time.Duration
	// SlowChunks is the number of text chunks in SLOW mode. Default 30.
	SlowChunks int
	// Logger gets one debug line per request; nil discards.
	Logger *slog.Logger
}

const (
	defaultSlowChunkDelay = 200 * time.Millisecond
	defaultSlowChunks     = 30
	// maxBodyBytes bounds a request body; the CLI sends up to ~130 KB.
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

// Request is one request the server received; Header holds the headers
// worth asserting on, not the noise.
type Request = fakehttp.Request

// Server is a running fake Anthropic API. Close it when done.
type Server struct {
	*fakehttp.Server
	opts Options

	msgSeq, toolSeq atomic.Int64
}

// recordedHeaders are the headers a Request keeps.
func recordedHeaders() []string {
	return []string{"User-Agent", "Anthropic-Version", "Anthropic-Beta", "X-Api-Key",
		"Authorization", "X-App", "Content-Type", "Accept"}
}

// Start listens on a free loopback port and serves until Close; URL() is
// what to put in ANTHROPIC_BASE_URL.
func Start(opts Options) (*Server, error) {
	s := &Server{opts: opts.withDefaults()}
	var err error
	s.Server, err = fakehttp.Start(s.routes(), fakehttp.Options{Name: "fakeanthropic", MaxBody: maxBodyBytes,
		Headers: recordedHeaders(), BodyError: writeBodyError, Logger: s.opts.Logger})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// routes dispatches; the body has been read and recorded already.
// Patterns match the path only, so the CLI's "?beta=true" is accepted
// everywhere.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.handleMessages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.handleCountTokens)
	mux.HandleFunc("GET /v1/models", handleModels)
	mux.HandleFunc("GET /v1/models/{id}", handleModel)
	mux.HandleFunc("/", handleNotFound)
	return mux
}
