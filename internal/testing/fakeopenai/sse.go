package fakeopenai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

const (
	// textPieceRunes is the size of a streamed text delta, small enough that
	// even short replies arrive as several deltas, as real ones do.
	textPieceRunes = 8
	// argPieces is how many deltas carry a tool call's arguments, so clients
	// must really reassemble partial JSON.
	argPieces = 3
)

// sseWriter writes server-sent events and flushes each one, so a paced
// stream reaches the client chunk by chunk.
type sseWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

// startSSE sends the headers of a 200 event stream.
func startSSE(w http.ResponseWriter) sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sseWriter{w: w, rc: http.NewResponseController(w)}
}

// send writes one event: "event: NAME" first when event is not empty (the
// Responses API names its events; Chat Completions sends data lines only).
func (s sseWriter) send(event string, data []byte) error {
	var err error
	if event != "" {
		_, err = fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, data)
	} else {
		_, err = fmt.Fprintf(s.w, "data: %s\n\n", data)
	}
	if err != nil {
		return fmt.Errorf("write event: %w", err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("flush event: %w", err)
	}
	return nil
}

// sendJSON sends v as one data line.
func (s sseWriter) sendJSON(event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	return s.send(event, b)
}

// textPieces are the deltas that rebuild rep's text.
func (r reply) textPieces() []string {
	if r.pieces != nil {
		return r.pieces
	}
	return fakehttp.Split(r.text, textPieceRunes)
}

// argPiecesOf cuts a call's arguments into argPieces deltas.
func argPiecesOf(args json.RawMessage) []string {
	per := (utf8.RuneCount(args) + argPieces - 1) / argPieces
	return fakehttp.Split(string(args), per)
}

// slowWait is how long a non-streamed SLOW reply waits, as long as its
// stream would have taken.
func (r reply) slowWait() time.Duration {
	return r.delay * time.Duration(max(0, len(r.pieces)-1))
}
