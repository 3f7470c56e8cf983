// Package fakehttp owns what the fake model APIs share: a server on a free
// loopback port whose Close ends in-flight streams and waits for every
// handler, and the record of the requests it received (each body read
// once, up front, and handed on to the API's own handler).
package fakehttp

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
	"time"
)

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	// Header holds the recorded headers (Options.Headers).
	Header http.Header
	// Body is the JSON body, or nil when it was empty or not JSON.
	Body json.RawMessage
}

// Clone is a deep copy of r.
func (r Request) Clone() Request {
	// url.Values and http.Header share a shape; Header.Clone deep-copies it.
	r.Query = url.Values(http.Header(r.Query).Clone())
	r.Header = r.Header.Clone()
	r.Body = bytes.Clone(r.Body)
	return r
}

// Options configure a Server.
type Options struct {
	// Name prefixes errors and log lines: "fakeopenai".
	Name string
	// MaxBody bounds a request body.
	MaxBody int64
	// Headers, when set, are the only headers recorded; nil records all.
	Headers []string
	// BodyError answers a request whose body could not be read (too
	// large, cut off) in the API's own error shape.
	BodyError func(http.ResponseWriter, error)
	// Logger gets one debug line per request; nil discards.
	Logger *slog.Logger
}

// Server is a running fake API. Close it when done.
type Server struct {
	opts Options
	ln   net.Listener
	http *http.Server
	// stop cancels the base context of every request, so streams end on
	// Close.
	stop   context.CancelFunc
	served chan error
	// conns counts live connections; each one's goroutine runs its
	// handlers, so waiting for it to reach zero waits for every handler.
	conns sync.WaitGroup

	mu   sync.Mutex
	reqs []Request

	closeOnce sync.Once
	closeErr  error
}

// Start serves h on a free loopback port until Close. Every request's
// body is read and recorded before h runs; h reads it again from r.Body
// or with BodyOf.
func Start(h http.Handler, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s: listen: %w", opts.Name, err)
	}
	base, stop := context.WithCancel(context.Background())
	s := &Server{opts: opts, ln: ln, stop: stop, served: make(chan error, 1)}
	s.http = &http.Server{
		Handler:           s.recording(h),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnState:         s.trackConn,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
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

// URL is the server's root, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

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
			s.closeErr = fmt.Errorf("%s: close: %w", s.opts.Name, err)
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
		out[i] = r.Clone()
	}
	return out
}

// recording reads and records every body up front, then calls h.
func (s *Server) recording(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
		s.record(r, body)
		s.opts.Logger.Debug(s.opts.Name+" request", "method", r.Method, "url", r.URL.String(), "bytes", len(body))
		if err != nil {
			s.opts.BodyError(w, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bodyKey{}, body)))
	})
}

func (s *Server) record(r *http.Request, body []byte) {
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone()}
	if s.opts.Headers != nil {
		rec.Header = http.Header{}
		for _, k := range s.opts.Headers {
			if v := r.Header.Values(k); len(v) > 0 {
				rec.Header[k] = v
			}
		}
	}
	if json.Valid(body) {
		rec.Body = bytes.Clone(body)
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	s.mu.Unlock()
}

// bodyKey keys the request body the server has read, in the request's
// context.
type bodyKey struct{}

// BodyOf is the body the server read for r.
func BodyOf(r *http.Request) []byte {
	b, _ := r.Context().Value(bodyKey{}).([]byte)
	return b
}
