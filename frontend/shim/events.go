package shim

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
)

// writeTimeout bounds one frame's write: a client that takes longer is
// gone, and its connection is closed (it may reconnect and resume).
const writeTimeout = 10 * time.Second

// events serves WS /events: every AdapterEvent, one per text frame, as
// it is decided, made from the log (view.go). Every client reads at its
// own place: by default from the oldest event no client has been sent
// yet; ?runId=R&after=N resumes after event N of run R (then every later
// run), waiting for its next event when N is its last so far;
// ?replay=all sends every run kept. A resume from a run no longer kept
// (or whose events the log no longer has) is refused with close code
// 4410, never skipped silently; an N that is no sequence, or one the run
// has not reached, with 400 before the upgrade.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if !s.subscribe() {
		s.tooManySubscribers(w, r)
		return
	}
	defer s.unsubscribe()
	q := r.URL.Query()
	var after int64
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			bad := &RangeError{Field: "after", Value: strconv.Quote(a), Reason: "a sequence is a whole number from 0 to 2^63-1"}
			detail(w, http.StatusBadRequest, bad.Error())
			return
		}
		after = n
	}
	from, startErr := s.runs.start(r.Context(), q.Get("runId"), after, q.Get("replay") == "all", s.countRun)
	if errors.Is(startErr, ErrOutOfRange) {
		detail(w, http.StatusBadRequest, startErr.Error())
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	if startErr != nil {
		_ = ws.Close(4410, truncate(startErr.Error()))
		return
	}
	ctx := ws.CloseRead(r.Context()) // inbound messages are ignored; a close ends the stream
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(s.ctx, stop)() // the shim's own end ends its streams
	err = s.follow(ctx, from, func(frame []byte) error {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		defer cancel()
		return ws.Write(wctx, websocket.MessageText, frame)
	})
	switch {
	case errors.Is(err, ErrGone):
		_ = ws.Close(4410, truncate(err.Error()))
	case s.ctx.Err() != nil:
		_ = ws.Close(websocket.StatusGoingAway, "shim shutting down")
	}
}

// truncate keeps a close reason within WebSocket's 123 bytes.
func truncate(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
