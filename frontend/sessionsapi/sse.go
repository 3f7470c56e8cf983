package sessionsapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/safe"
)

// events streams a session's canonical events as Server-Sent Events:
// `id:` is the seq, `event:` the kind, `data:` the event. It starts after
// Last-Event-ID (or ?after=N) and ends after session.ended; a client that
// reconnects with the last id it saw misses nothing and sees nothing
// twice. Over WebSocket, each message is {"id": seq, "event": …}.
func (a *api) events(w http.ResponseWriter, r *http.Request) {
	after, ok := resumeFrom(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request", "Last-Event-ID and after must be a seq (a non-negative integer)")
		return
	}
	id := r.PathValue("id")
	info, err := a.m.Get(id)
	if err != nil {
		a.fail(w, err)
		return
	}
	if after > info.LastSeq {
		writeError(w, http.StatusBadRequest, "cursor_ahead",
			fmt.Sprintf("the session's last event is %d: a stream cannot start after %d", info.LastSeq, after))
		return
	}
	a.stream(w, r, func(ctx context.Context, send func(uint64, agent.Event) bool) error {
		for e, err := range a.m.Events(ctx, id, after) {
			if err != nil {
				return err
			}
			if !send(uint64(e.Seq), e) {
				return nil
			}
			// Handed to the writer (an event stream's writes it at once);
			// what was logged before the stream began is a replay.
			if a.cfg.Observer != nil && uint64(e.Seq) > info.LastSeq {
				a.cfg.Observer.EventDelivered(info.Agent, &e)
			}
		}
		return nil
	})
}

// feed streams every session's events, as events does one session's;
// `id:` is the position in the runner-wide feed. It never ends by itself.
func (a *api) feed(w http.ResponseWriter, r *http.Request) {
	after, ok := resumeFrom(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request", "Last-Event-ID and after must be a position (a non-negative integer)")
		return
	}
	end, err := a.m.FeedEnd()
	if err != nil {
		a.fail(w, err)
		return
	}
	if after > end {
		writeError(w, http.StatusBadRequest, "cursor_ahead",
			fmt.Sprintf("the feed's last position is %d: a stream cannot start after %d", end, after))
		return
	}
	a.stream(w, r, func(ctx context.Context, send func(uint64, agent.Event) bool) error {
		for fe, err := range a.m.Feed(ctx, after) {
			if err != nil {
				return err
			}
			if !send(fe.Pos, fe.Event) {
				return nil
			}
		}
		return nil
	})
}

// stream answers with an event stream fed by produce, which runs on a
// goroutine of its own until it returns or the request ends; idle
// streams get a keep-alive comment every Heartbeat. A reader that stops
// reading is dropped after two heartbeats, as a WebSocket reader that
// stops answering pings is: its queue stops draining (stallWatch), or a
// write blocks that long. A WebSocket upgrade gets the same stream over
// WebSocket (streamWS).
func (a *api) stream(w http.ResponseWriter, r *http.Request, produce func(context.Context, func(uint64, agent.Event) bool) error) {
	if isWebSocket(r) {
		a.streamWS(w, r, produce)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal_error", "streaming is not supported here")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	ctx, cancel := context.WithCancel(r.Context())
	type item struct {
		id uint64
		e  agent.Event
	}
	items := make(chan item)
	failed := make(chan error, 1)
	done := make(chan struct{})
	defer func() { cancel(); <-done }() // the producer ends with the request
	go func() {
		defer close(done)
		defer close(items)
		defer safe.Recover(a.cfg.Logger, "sessions API stream", func(p *safe.PanicError) { failed <- p })
		err := produce(ctx, func(id uint64, e agent.Event) bool {
			select {
			case items <- item{id, e}:
				return true
			case <-ctx.Done():
				return false
			}
		})
		if err != nil && ctx.Err() == nil {
			failed <- err
		}
	}()
	window := 2 * a.cfg.Heartbeat
	out := &sseWriter{rc: http.NewResponseController(w), window: window}
	conn := connFrom(r.Context())
	watch := newStallWatch(conn, window, time.Now())
	drop := func(why error) {
		a.cfg.Logger.Info("event stream dropped: its reader stopped reading", "path", r.URL.Path, "remote", r.RemoteAddr, "err", why)
		dropConn(conn)
	}
	beat := time.NewTicker(a.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case it, ok := <-items:
			if !ok {
				select {
				case err := <-failed:
					writeSSEError(w, err)
				default:
				}
				flusher.Flush()
				return
			}
			// A write that fails cancels the request's context too: the
			// reader left (nothing to say) only if it was cancelled first.
			left := ctx.Err() != nil
			if err := out.send(func() error { return writeSSE(w, it.id, it.e) }); err != nil {
				if !left {
					drop(err)
				}
				return
			}
		case now := <-beat.C:
			if watch.stalled(now) {
				drop(errStalled)
				return
			}
			left := ctx.Err() != nil
			if err := out.send(func() error { _, err := io.WriteString(w, ": keep-alive\n\n"); return err }); err != nil {
				if !left {
					drop(err)
				}
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// sseWriter writes and flushes one piece of a stream at a time, each
// within the window: a write that blocks that long (the reader stopped,
// and the socket's buffers are full) ends the stream.
type sseWriter struct {
	rc     *http.ResponseController
	window time.Duration
}

func (s *sseWriter) send(write func() error) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.window)) // unsupported: writes block as long as they do
	if err := write(); err != nil {
		return err
	}
	return s.rc.Flush()
}

// resumeFrom reads where the stream starts: Last-Event-ID wins over after.
func resumeFrom(r *http.Request) (uint64, bool) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}

func writeSSE(w http.ResponseWriter, id uint64, e agent.Event) error {
	b := fmt.Appendf(nil, "id: %d\nevent: %s\ndata: ", id, e.Kind)
	b, err := e.AppendLogged(b) // the logged bytes: no encoding per reader
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, "\n\n"...))
	return err
}

// writeSSEError ends a stream that failed with an error event (no id: it
// is not part of the session's log).
func writeSSEError(w http.ResponseWriter, err error) {
	data, _ := json.Marshal(apiError{Code: "stream_failed", Message: err.Error()})
	_, _ = fmt.Fprintf(w, "event: stream_error\ndata: %s\n\n", data)
}
