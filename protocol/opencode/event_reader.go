package opencode

import "io"

// EventReader reads the bus events of a GET /event body: an SSEReader and
// DecodeEvent in one.
type EventReader struct {
	sse *SSEReader
}

// NewEventReader reads events from body (a GET /event response's) with the
// given cap on one event; zero or less means DefaultMaxEventSize.
func NewEventReader(body io.Reader, maxEventSize int) *EventReader {
	return &EventReader{sse: NewSSEReader(body, maxEventSize)}
}

// Next returns the next event. Errors matching ErrSkipped (an event over
// the cap, one cut off by the end of the stream, data that is not an event)
// are recoverable: call Next again. io.EOF ends the stream; any other
// error is the body's.
func (r *EventReader) Next() (*Event, error) {
	msg, err := r.sse.Next()
	if err != nil {
		return nil, err
	}
	return DecodeEvent(msg.Data)
}

// SSE is the underlying reader (for LastEventID and Retry).
func (r *EventReader) SSE() *SSEReader { return r.sse }
