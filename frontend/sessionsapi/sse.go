package sessionsapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tetherhq/tether/agent"
)

// events streams a session's canonical events as Server-Sent Events:
// `id:` is the seq, `event:` the kind, `data:` the event. It starts after
// Last-Event-ID (or ?after=N) and ends after session.ended; a client that
// reconnects with the last id it saw misses nothing and sees nothing
// twice.
func (a *api) events(w http.ResponseWriter, r *http.Request) {
	after, ok := resumeFrom(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request", "Last-Event-ID and after must be a seq (a non-negative integer)")
		return
	}
	id := r.PathValue("id")
	if _, err := a.m.Get(id); err != nil {
		a.fail(w, err)
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
	events := make(chan agent.Event)
	failed := make(chan error, 1)
	done := make(chan struct{})
	defer func() { cancel(); <-done }() // the reader ends with the request
	go func() {
		defer close(done)
		defer close(events)
		for e, err := range a.m.Events(ctx, id, after) {
			if err != nil {
				failed <- err
				return
			}
			select {
			case events <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	beat := time.NewTicker(a.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				select {
				case err := <-failed:
					writeSSEError(w, err)
				default:
				}
				flusher.Flush()
				return
			}
			if err := writeSSE(w, e); err != nil {
				return
			}
			flusher.Flush()
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case <-ctx.Done():
			return
		}
	}
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

func writeSSE(w http.ResponseWriter, e agent.Event) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, data)
	return err
}

// writeSSEError ends a stream that failed with an error event (no id: it
// is not part of the session's log).
func writeSSEError(w http.ResponseWriter, err error) {
	data, _ := json.Marshal(apiError{Code: "stream_failed", Message: err.Error()})
	_, _ = fmt.Fprintf(w, "event: stream_error\ndata: %s\n\n", data)
}
