package opencode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrInvalidSSEField is wrapped by WriteSSE's error for a field the stream
// cannot carry: a CR in any field, a LF in the id or name, a NUL in the id.
var ErrInvalidSSEField = errors.New("opencode: field cannot be written to an event stream")

// AppendSSE appends ev in text/event-stream form: id and event lines when
// set, one data line per line of Data, and the blank line that dispatches
// it. SSEReader reads it back as ev (an empty ID reads back as the stream's
// last id).
func AppendSSE(dst []byte, ev SSEEvent) ([]byte, error) {
	if err := checkSSEField("id", ev.ID, true); err != nil {
		return dst, err
	}
	if err := checkSSEField("event", ev.Name, false); err != nil {
		return dst, err
	}
	if bytes.IndexByte(ev.Data, '\r') >= 0 {
		return dst, fmt.Errorf("%w: data contains a CR", ErrInvalidSSEField)
	}
	if ev.ID != "" {
		dst = append(dst, "id: "...)
		dst = append(dst, ev.ID...)
		dst = append(dst, '\n')
	}
	if ev.Name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, ev.Name...)
		dst = append(dst, '\n')
	}
	data := ev.Data
	for {
		line, rest, more := bytes.Cut(data, []byte{'\n'})
		dst = append(dst, "data: "...)
		dst = append(dst, line...)
		dst = append(dst, '\n')
		if !more {
			break
		}
		data = rest
	}
	return append(dst, '\n'), nil
}

// WriteSSE writes ev to w as AppendSSE lays it out, in one Write.
func WriteSSE(w io.Writer, ev SSEEvent) error {
	buf, err := AppendSSE(make([]byte, 0, len(ev.Data)+len(ev.ID)+len(ev.Name)+32), ev)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

func checkSSEField(name, value string, isID bool) error {
	for i := 0; i < len(value); i++ {
		switch c := value[i]; {
		case c == '\r' || c == '\n':
			return fmt.Errorf("%w: %s contains a line break", ErrInvalidSSEField, name)
		case c == 0 && isID:
			return fmt.Errorf("%w: id contains a NUL", ErrInvalidSSEField)
		}
	}
	return nil
}
