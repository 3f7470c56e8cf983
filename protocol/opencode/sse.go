package opencode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// DefaultMaxEventSize caps one event's data when the caller gives no cap:
// a completed tool part carries the tool's whole output (twice: output and
// metadata.output), so the cap is generous.
const DefaultMaxEventSize = 64 << 20

// fieldSlack is how much longer than the data cap a line may be: the field
// name and colon in front of the value ("data: ").
const fieldSlack = 16

// Buffer sizes: small while idle, and a buffer grown for a long line is
// dropped once it is empty. A data line longer than spillSize goes to the
// event's data as it arrives instead of growing the buffer.
const (
	initialBufferSize = 4 << 10
	keptBufferSize    = 64 << 10
	spillSize         = 32 << 10
	maxSpillChunk     = 4 << 20
)

// maxEmptyReads is how many (0, nil) reads in a row are taken as a broken
// source (io.ErrNoProgress), as bufio does.
const maxEmptyReads = 100

// SSEEvent is one dispatched server-sent event.
type SSEEvent struct {
	// ID is the stream's last event ID when the event was dispatched: the
	// latest id field, which persists across events (opencode sends none).
	ID string
	// Name is the event field; empty means the default type, "message"
	// (opencode sends none).
	Name string
	// Data is the event's data lines joined with "\n". It belongs to the
	// caller.
	Data []byte
}

// ErrSkipped matches the errors after which reading goes on: an event over
// the size cap, an event cut off by the end of the stream, and an event
// whose data does not decode.
var ErrSkipped = errors.New("opencode: event skipped")

// EventTooLargeError reports an event whose data, or one of whose lines,
// exceeds the cap. The event was skipped whole; the next call returns the
// event after it.
type EventTooLargeError struct {
	Size  int64 // bytes of the event read before and while skipping it
	Limit int
}

func (e *EventTooLargeError) Error() string {
	return fmt.Sprintf("opencode: sse event of at least %d bytes exceeds the limit of %d bytes; skipped", e.Size, e.Limit)
}

func (e *EventTooLargeError) Is(target error) bool { return target == ErrSkipped }

// TruncatedEventError reports a stream that ended inside an event (no blank
// line after it), typically a server that died or a connection cut
// mid-write. The event is not dispatched; the next call returns io.EOF.
type TruncatedEventError struct {
	Size int64 // bytes of the unfinished event
}

func (e *TruncatedEventError) Error() string {
	return fmt.Sprintf("opencode: sse stream ended inside an event (%d bytes not dispatched)", e.Size)
}

func (e *TruncatedEventError) Is(target error) bool { return target == ErrSkipped }

// SSEReader parses a text/event-stream body as the HTML standard's
// event-stream interpretation does: lines end in CRLF, LF or CR; a line
// starting with ":" is a comment; "field: value" sets a field (one space
// after the colon is dropped); a blank line dispatches the event if it had
// data. A leading byte order mark is skipped. Bytes are passed through as
// they are (no UTF-8 replacement).
//
// An SSEReader keeps its state across read errors (a deadline, say), so Next
// may simply be called again. It is not safe for concurrent use.
type SSEReader struct {
	src     io.Reader
	max     int
	spillAt int // spillSize, lower in tests

	buf  []byte // buf[start:end] is unread; buf[start:start+scan] has no line end
	head int
	end  int
	scan int
	eof  bool

	bomChecked bool
	skipLF     bool // the last line ended in CR: a LF right after belongs to it

	discardingLine bool // inside a line longer than the cap
	spilling       bool // inside a long data line, kept in spillChunks as it arrives
	spillChunks    [][]byte
	spillLen       int
	oversize       bool  // the current event is over the cap and being skipped
	skipped        int64 // bytes of the current oversize event

	data      []byte
	dataLines int
	name      string
	lastID    string
	retry     time.Duration
	hasRetry  bool
	pending   bool // fields of an undispatched event were read
	truncated bool // a TruncatedEventError was returned; only io.EOF follows
}

// NewSSEReader returns a reader with the given cap on an event's data; zero
// or less means DefaultMaxEventSize.
func NewSSEReader(src io.Reader, maxEventSize int) *SSEReader {
	if maxEventSize <= 0 {
		maxEventSize = DefaultMaxEventSize
	}
	return &SSEReader{src: src, max: maxEventSize, spillAt: spillSize, buf: make([]byte, initialBufferSize)}
}

// MaxEventSize reports the cap in force.
func (r *SSEReader) MaxEventSize() int { return r.max }

// LastEventID is the latest id field seen, which a reconnecting client
// sends as Last-Event-ID.
func (r *SSEReader) LastEventID() string { return r.lastID }

// Retry is the latest valid retry field: the reconnection delay the server
// asks for.
func (r *SSEReader) Retry() (time.Duration, bool) { return r.retry, r.hasRetry }

// Next returns the next dispatched event. Errors matching ErrSkipped are
// recoverable; io.EOF ends the stream; any other error comes from the
// underlying reader and Next may be called again.
func (r *SSEReader) Next() (SSEEvent, error) {
	for {
		line, err := r.nextLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return SSEEvent{}, r.finish()
			}
			return SSEEvent{}, err
		}
		if line == nil {
			// A line nextLine dealt with: an overlong one or a spilled one.
			continue
		}
		if len(line) == 0 {
			if ev, ok, err := r.dispatch(); ok {
				return ev, err
			}
			continue
		}
		r.field(line)
	}
}

// dispatch ends the current event at a blank line. ok is false when there
// is nothing to return (no data).
func (r *SSEReader) dispatch() (SSEEvent, bool, error) {
	defer r.reset()
	if r.oversize {
		return SSEEvent{}, true, &EventTooLargeError{Size: r.skipped, Limit: r.max}
	}
	if r.dataLines == 0 {
		return SSEEvent{}, false, nil
	}
	data := r.data
	if data == nil {
		data = []byte{}
	}
	r.data = nil
	return SSEEvent{ID: r.lastID, Name: r.name, Data: data}, true, nil
}

func (r *SSEReader) reset() {
	r.data, r.dataLines, r.name = nil, 0, ""
	r.spilling, r.spillChunks, r.spillLen = false, nil, 0
	r.oversize, r.skipped, r.pending = false, 0, false
}

// field applies one non-blank line.
func (r *SSEReader) field(line []byte) {
	if line[0] == ':' {
		return
	}
	r.pending = true
	if r.oversize {
		r.skipped += int64(len(line)) + 1
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		size := len(r.data) + len(value)
		if r.dataLines > 0 {
			size++
		}
		if size > r.max {
			r.markOversize(int64(size))
			return
		}
		if r.dataLines > 0 {
			r.data = append(r.data, '\n')
		} else if r.data == nil {
			r.data = make([]byte, 0, len(value))
		}
		r.data = append(r.data, value...)
		r.dataLines++
	case "event":
		r.name = string(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.lastID = string(value)
		}
	case "retry":
		if ms, ok := parseDigits(value); ok {
			r.retry, r.hasRetry = time.Duration(ms)*time.Millisecond, true
		}
	}
}

func (r *SSEReader) markOversize(size int64) {
	r.oversize = true
	r.skipped += size
	r.data, r.dataLines = nil, 0
	r.spillChunks, r.spillLen = nil, 0
}

// parseDigits accepts only ASCII digits, as the standard asks of retry, and
// a value that fits a duration in milliseconds.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	ms, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, false
	}
	return ms, true
}

// finish handles the end of the stream: an event left undispatched (fields
// read, or an unterminated line that is not a comment) is reported once,
// then io.EOF.
func (r *SSEReader) finish() error {
	partial := r.buf[r.head:r.end]
	lostLine := r.discardingLine || (len(partial) > 0 && partial[0] != ':')
	if r.truncated || (!r.pending && !lostLine) {
		r.reset()
		r.head, r.end, r.scan = 0, 0, 0
		return io.EOF
	}
	size := int64(len(r.data)+r.spillLen) + r.skipped + int64(len(partial))
	r.reset()
	r.head, r.end, r.scan, r.discardingLine = 0, 0, 0, false
	r.truncated = true
	return &TruncatedEventError{Size: size}
}
