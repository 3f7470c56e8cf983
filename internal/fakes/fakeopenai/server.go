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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
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

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	// Header holds every request header.
	Header http.Header
	// Body is the JSON body, or nil when it was empty or not JSON.
	Body json.RawMessage
}

func (r Request) clone() Request {
	// url.Values and http.Header share a shape; Header.Clone deep-copies it.
	r.Query = url.Values(http.Header(r.Query).Clone())
	r.Header = r.Header.Clone()
	r.Body = bytes.Clone(r.Body)
	return r
}

// Server is a running fake OpenAI API. Close it when done.
type Server struct {
	opts Options
	ln   net.Listener
	http *http.Server

	// stop cancels the base context of every request, so streams end on Close.
	stop   context.CancelFunc
	served chan error
	// conns counts live connections; each one's goroutine runs its handlers,
	// so waiting for it to reach zero waits for every handler.
	conns sync.WaitGroup

	// seq numbers replies and tool calls, so ids are unique per server.
	seq atomic.Int64

	mu   sync.Mutex
	reqs []Request

	closeOnce sync.Once
	closeErr  error
}

// Start listens on a free loopback port and serves until Close.
func Start(opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakeopenai: listen: %w", err)
	}
	base, stop := context.WithCancel(context.Background())
	s := &Server{
		opts:   opts.withDefaults(),
		ln:     ln,
		stop:   stop,
		served: make(chan error, 1),
	}
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnState:         s.trackConn,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelDebug),
	}
	go func() { s.served <- s.http.Serve(ln) }()
	return s, nil
}

// trackConn runs on the Serve goroutine for StateNew, so every Add happens
// before Serve returns; Close relies on that to Wait safely.
func (s *Server) trackConn(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		s.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.conns.Done()
	}
}

// URL is the server's root, e.g. "http://127.0.0.1:PORT"; clients want
// URL()+"/v1" as their base URL.
func (s *Server) URL() string {
	return "http://" + s.ln.Addr().String()
}

// Close stops the listener, ends in-flight streams and waits until every
// handler has returned. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		err := s.http.Close()
		if serveErr := <-s.served; !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
		s.conns.Wait()
		if err != nil {
			s.closeErr = fmt.Errorf("fakeopenai: close: %w", err)
		}
	})
	return s.closeErr
}

// Requests returns a copy of every request received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = r.clone()
	}
	return out
}

func (s *Server) record(r *http.Request, body []byte) {
	rec := Request{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.Query(),
		Header: r.Header.Clone(),
	}
	if json.Valid(body) {
		rec.Body = bytes.Clone(body)
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	s.mu.Unlock()
}

// routes reads and records every body up front, then dispatches.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.handleResponses)
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("GET /v1/models", handleModels)
	mux.HandleFunc("GET /v1/models/{id}", handleModel)
	mux.HandleFunc("/", handleNotFound)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		s.record(r, body)
		s.opts.Logger.Debug("fakeopenai request", "method", r.Method, "url", r.URL.String(), "bytes", len(body))
		if err != nil {
			writeBodyError(w, err)
			return
		}
		// Bodies are read as plain JSON; a compressed one would only look
		// like bad JSON, so say what is wrong instead.
		if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
			writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("fake: Content-Encoding %q is not supported", enc))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bodyKey{}, body)))
	})
}

// bodyKey keys the request body routes has read, in the request's context.
type bodyKey struct{}

// bodyOf is the body routes read for r.
func bodyOf(r *http.Request) []byte {
	b, _ := r.Context().Value(bodyKey{}).([]byte)
	return b
}

// next is the next sequence number for reply and call ids.
func (s *Server) next() int64 {
	return s.seq.Add(1)
}
