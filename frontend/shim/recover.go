package shim

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/tetherhq/tether/internal/safe"
)

// A panic in the shim's code ends the request or run it happened in,
// logged with its stack, never the process: the other runs' clients, the
// event stream and the agent's session are the backend's to keep.

// logPanic logs v, a panic of what, with the stack it unwound.
func (s *Server) logPanic(what string, v any, attrs ...any) {
	s.log.Error("shim: "+what+" panicked", append([]any{"panic", fmt.Sprint(v), "stack", string(debug.Stack())}, attrs...)...)
}

// recoverRequests answers a handler's panic with 500 (when nothing was
// written yet) and logs it; without it net/http drops the connection and
// prints to stderr. http.ErrAbortHandler goes on, as net/http means it.
func (s *Server) recoverRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.logPanic("request", v, "method", r.Method, "path", r.URL.Path)
			if !tw.wrote {
				detail(w, http.StatusInternalServerError, "the shim failed this request (its log tells why)")
			}
		}()
		next.ServeHTTP(tw, r)
	})
}

// trackingWriter notes whether a reply was begun. Unwrap lets
// http.ResponseController and the WebSocket upgrade reach the connection.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(status int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// goSafe runs fn in a goroutine the Server waits for on Close; a panic
// in it is logged and handed to onPanic (nil: nothing more).
func (s *Server) goSafe(what string, fn func(), onPanic func(v any)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer safe.Recover(s.log, "shim: "+what, func(p *safe.PanicError) {
			if onPanic != nil {
				onPanic(p.Value)
			}
		})
		fn()
	}()
}

// crashed ends a run whose pump panicked: the backend is told (an error
// and lifecycle crashed, as for an agent that died), the run is ended in
// error, and its session closed, so the agent does not go on unwatched.
func (s *Server) crashed(r *run, v any) {
	defer func() { // telling it must not be what brings the process down
		if again := recover(); again != nil {
			s.logPanic("ending a crashed run", again, "run", r.id)
		}
	}()
	// Told first, then ended: a spawn waits for the run's end, so the
	// next run's events come after these.
	reason := clip(fmt.Sprintf("the shim failed this run: %v", v))
	if err := s.runs.crash(r.entry, s.cfg.Now(),
		r.mapper.ev("error", "severity", "critical", "message", reason, "category", "internal", "recoverable", false),
		r.mapper.ev("lifecycle", "action", "crashed", "reason", reason)); err != nil {
		s.log.Warn("the run's record was not saved", "run", r.id, "err", err)
	}
	s.runs.finish(r.entry)
	r.mu.Lock()
	r.ended, r.inTurn, r.status = true, false, StatusError
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StopTimeout)
	defer cancel()
	if err := s.cfg.Sessions.Close(ctx, r.sessionID); err != nil {
		s.log.Warn("the crashed run's session did not close cleanly", "run", r.id, "err", err)
	}
}
