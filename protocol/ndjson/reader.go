// Package ndjson owns line framing for newline-delimited JSON streams: it cuts
// a byte stream into lines under a size cap and writes lines back out. It
// knows nothing of what the lines mean and does no I/O of its own beyond the
// io.Reader and io.Writer it is given.
package ndjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineSize is the default cap on one line: large enough for base64
// images and big tool results, which overflow the 1 MiB caps of other SDKs.
const DefaultMaxLineSize = 64 << 20

// The working buffer for ordinary lines adapts to the stream (see
// nextSize): an idle stream holds minBufferSize, a busy one reads in chunks
// of maxBufferSize. Lines that do not fit that move to a one-off buffer of
// their own (see growLarge).
const (
	minBufferSize = 4 << 10
	maxBufferSize = 64 << 10
)

// LineTooLongError reports a line over the cap. The line was skipped whole;
// the next ReadLine returns the line after it.
type LineTooLongError struct {
	Size  int64 // bytes in the skipped line, without the newline
	Limit int
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("ndjson: line of %d bytes exceeds the limit of %d bytes; skipped", e.Size, e.Limit)
}

// TruncatedLineError reports bytes left at end of stream with no newline,
// typically a writer that died mid-line. ReadLine returns io.EOF after it.
type TruncatedLineError struct {
	Size int
}

func (e *TruncatedLineError) Error() string {
	return fmt.Sprintf("ndjson: stream ended inside a line (%d bytes without a newline)", e.Size)
}

// ErrSkipped matches both recoverable errors: the stream goes on after them.
var ErrSkipped = errors.New("ndjson: line skipped")

func (e *LineTooLongError) Is(target error) bool   { return target == ErrSkipped }
func (e *TruncatedLineError) Is(target error) bool { return target == ErrSkipped }

// Reader cuts lines out of a stream. Blank lines and a trailing "\r" are
// dropped. A Reader keeps its state across read errors (a deadline, say), so
// ReadLine may simply be called again.
type Reader struct {
	src   io.Reader
	max   int
	buf   []byte // buf[start:end] is unread; buf[start:start+scanned] has no '\n'
	start int
	end   int
	scan  int

	large      bool  // buf is a one-off buffer for a single long line
	discarding bool  // skipping the rest of an overlong line
	discarded  int64 // bytes skipped so far in that line
	eof        bool

	lastRead int  // bytes the last read returned
	filled   bool // the last read filled all the room it was given
}

// NewReader returns a Reader with the given cap on a line's length; a cap of
// zero or less means DefaultMaxLineSize.
func NewReader(src io.Reader, maxLineSize int) *Reader {
	if maxLineSize <= 0 {
		maxLineSize = DefaultMaxLineSize
	}
	return &Reader{src: src, max: maxLineSize, buf: make([]byte, minBufferSize)}
}

// MaxLineSize reports the cap in force.
func (r *Reader) MaxLineSize() int { return r.max }

// ReadLine returns the next non-blank line without its newline. The slice
// belongs to the caller. Errors matching ErrSkipped are recoverable; io.EOF
// ends the stream; any other error comes from the underlying reader.
func (r *Reader) ReadLine() ([]byte, error) {
	for {
		if i := bytes.IndexByte(r.buf[r.start+r.scan:r.end], '\n'); i >= 0 {
			lineEnd := r.start + r.scan + i
			line, err, ok := r.take(lineEnd)
			if ok {
				return line, err
			}
			continue
		}
		r.scan = r.end - r.start
		if r.eof {
			return r.finish()
		}
		if err := r.fill(); err != nil {
			if errors.Is(err, io.EOF) {
				r.eof = true
				continue
			}
			return nil, err
		}
	}
}

// Buffered returns the next line if it is already in the buffer, without
// reading: ok is false when a read would be needed. Callers use it to skip
// the cost of arming a read deadline when no read will block.
func (r *Reader) Buffered() (line []byte, err error, ok bool) {
	for {
		i := bytes.IndexByte(r.buf[r.start+r.scan:r.end], '\n')
		if i < 0 {
			r.scan = r.end - r.start
			return nil, nil, false
		}
		if line, err, ok := r.take(r.start + r.scan + i); ok {
			return line, err, true
		}
	}
}

// take consumes buf[start:lineEnd] and its newline. ok is false for a line
// that yields nothing (blank), so the caller keeps looking.
func (r *Reader) take(lineEnd int) (line []byte, err error, ok bool) {
	raw := r.buf[r.start:lineEnd]
	wasLarge := r.large
	r.start, r.scan = lineEnd+1, 0
	if r.discarding {
		size := r.discarded + int64(len(raw))
		r.discarding, r.discarded = false, 0
		r.dropLarge()
		return nil, &LineTooLongError{Size: size, Limit: r.max}, true
	}
	raw = bytes.TrimSuffix(raw, []byte{'\r'})
	if len(raw) > r.max {
		r.dropLarge()
		return nil, &LineTooLongError{Size: int64(len(raw)), Limit: r.max}, true
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		r.dropLarge()
		return nil, nil, false
	}
	if wasLarge {
		// Hand the one-off buffer over whole: no copy of a huge line.
		r.moveRestToSmall()
		return raw[:len(raw):len(raw)], nil, true
	}
	out := make([]byte, len(raw))
	copy(out, raw)
	return out, nil, true
}

// fill reads more input, making room first: discard, resize, compact, or
// grow.
func (r *Reader) fill() error {
	pending := r.end - r.start
	switch size := r.nextSize(pending); {
	case r.discarding || pending > r.max:
		r.discarding = true
		r.discarded += int64(pending)
		r.start, r.end, r.scan = 0, 0, 0
		r.dropLarge()
	case size != len(r.buf):
		r.resize(size)
	case r.start > 0 && (r.end == len(r.buf) || r.start >= len(r.buf)/2):
		copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, pending
	case r.end == len(r.buf):
		r.growLarge()
	}
	room := len(r.buf) - r.end
	n, err := r.src.Read(r.buf[r.end:])
	r.end += n
	r.lastRead, r.filled = n, n == room
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// nextSize is the size the working buffer should have for the next read,
// given pending unread bytes. Data flowing (the last read filled its room,
// or one line fills the buffer) takes the full size at once: while lines
// keep coming, reads stay large and compaction rare. An idle-looking
// stream (the last read was small and ended on a line end: a writer that
// stops has written whole lines, while mid-stream reads mostly end inside
// one) goes back to the small size: an idle reader holds that much, however
// long the last line was (an agent's first lines, its tools and commands,
// run to 10 KB and more), and the first read that fills it takes the full
// size again.
func (r *Reader) nextSize(pending int) int {
	size := len(r.buf)
	switch {
	case r.large:
	case (r.filled || pending == size) && size < maxBufferSize:
		return maxBufferSize
	case pending == 0 && size > minBufferSize && 4*r.lastRead < size:
		return minBufferSize
	}
	return size
}

// resize moves the unread bytes into a new working buffer of size bytes.
func (r *Reader) resize(size int) {
	buf := make([]byte, size)
	r.end = copy(buf, r.buf[r.start:r.end])
	r.start = 0
	r.buf = buf
}

// growLarge moves a line that outgrew the buffer into a larger one. The first
// large buffer is sized for the whole cap at once: fresh pages cost no memory
// until written, so a 50 MB line costs about 50 MB, not the sum of every
// doubling step on the way there.
func (r *Reader) growLarge() {
	size := 2 * len(r.buf)
	if !r.large {
		size = r.max + 1
	}
	if size > r.max+1 {
		size = r.max + 1
	}
	grown := make([]byte, size)
	r.end = copy(grown, r.buf[r.start:r.end])
	r.start = 0
	r.buf = grown
	r.large = true
}

func (r *Reader) dropLarge() {
	if r.large {
		r.moveRestToSmall()
	}
}

// moveRestToSmall returns to a working buffer, keeping unread bytes: one
// that fits them, at least as large as the buffer that the line outgrew,
// since data was flowing.
func (r *Reader) moveRestToSmall() {
	rest := r.buf[r.start:r.end]
	small := make([]byte, max(maxBufferSize, len(rest)))
	r.end = copy(small, rest)
	r.start, r.scan = 0, 0
	r.buf = small
	r.large = false
}

// finish handles end of stream: a last line without newline is reported.
func (r *Reader) finish() ([]byte, error) {
	pending := r.end - r.start
	if r.discarding {
		size := r.discarded + int64(pending)
		r.discarding, r.discarded = false, 0
		r.start, r.end, r.scan = 0, 0, 0
		return nil, &LineTooLongError{Size: size, Limit: r.max}
	}
	if pending == 0 || len(bytes.TrimSpace(r.buf[r.start:r.end])) == 0 {
		r.start, r.end, r.scan = 0, 0, 0
		return nil, io.EOF
	}
	r.start, r.end, r.scan = 0, 0, 0
	return nil, &TruncatedLineError{Size: pending}
}
