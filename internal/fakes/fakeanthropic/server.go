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

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	// Header holds the headers worth asserting on (see record), not the noise.
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

// Server is a running fake Anthropic API. Close it when done.
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

	msgSeq, toolSeq atomic.Int64

	mu   sync.Mutex
	reqs []Request

	closeOnce sync.Once
	closeErr  error
}

// Start listens on a free loopback port and serves until Close.
func Start(opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakeanthropic: listen: %w", err)
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

// URL is the base URL to put in ANTHROPIC_BASE_URL, e.g. "http://127.0.0.1:PORT".
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
			s.closeErr = fmt.Errorf("fakeanthropic: close: %w", err)
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
		Header: http.Header{},
	}
	for _, k := range []string{
		"User-Agent", "Anthropic-Version", "Anthropic-Beta", "X-Api-Key",
		"Authorization", "X-App", "Content-Type", "Accept",
	} {
		if v := r.Header.Values(k); len(v) > 0 {
			rec.Header[k] = v
		}
	}
	if json.Valid(body) {
		rec.Body = body
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	s.mu.Unlock()
}

// routes reads and records every body up front, then dispatches. Patterns
// match the path only, so the CLI's "?beta=true" is accepted everywhere.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.handleMessages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.handleCountTokens)
	mux.HandleFunc("GET /v1/models", handleModels)
	mux.HandleFunc("GET /v1/models/{id}", handleModel)
	mux.HandleFunc("/", handleNotFound)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		s.record(r, body)
		s.opts.Logger.Debug("fakeanthropic request", "method", r.Method, "url", r.URL.String(), "bytes", len(body))
		if err != nil {
			writeBodyError(w, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mux.ServeHTTP(w, r)
	})
}
