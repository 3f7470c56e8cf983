package ndjson

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// ErrNewlineInLine is returned for a line that would break framing.
var ErrNewlineInLine = errors.New("ndjson: line contains a newline")

// Writer writes whole lines; concurrent WriteLine calls never interleave.
type Writer struct {
	mu  sync.Mutex
	dst io.Writer
	buf []byte
}

// NewWriter returns a Writer on dst.
func NewWriter(dst io.Writer) *Writer { return &Writer{dst: dst} }

// WriteLine writes line and a newline in one Write call.
func (w *Writer) WriteLine(line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return ErrNewlineInLine
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(append(w.buf[:0], line...), '\n')
	_, err := w.dst.Write(w.buf)
	if cap(w.buf) > minBufferSize {
		w.buf = nil // an idle writer holds no more than an idle reader
	}
	return err
}
