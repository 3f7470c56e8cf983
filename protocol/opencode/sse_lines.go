package opencode

import (
	"bytes"
	"errors"
	"io"
)

// lineLimit is the longest line kept; a longer one makes its event
// oversize.
func (r *SSEReader) lineLimit() int {
	if r.max > int(^uint(0)>>1)-fieldSlack {
		return r.max
	}
	return r.max + fieldSlack
}

// nextLine returns the next line without its terminator, aliasing the
// buffer until the next call. It returns a nil line (and nil error) for a
// line it has dealt with itself: the end of an overlong line, discarded, or
// of a spilled data line, applied.
func (r *SSEReader) nextLine() ([]byte, error) {
	for {
		if r.skipLF && r.head < r.end {
			if r.buf[r.head] == '\n' {
				r.head++
			}
			r.skipLF = false
		}
		if !r.bomChecked {
			r.checkBOM()
		}
		if r.bomChecked && !r.skipLF {
			if r.spilling {
				if r.spill() {
					return nil, nil
				}
			} else if i := lineEnd(r.buf[r.head+r.scan : r.end]); i >= 0 {
				return r.take(r.head + r.scan + i), nil
			} else {
				r.scan = r.end - r.head
				if r.end-r.head > r.lineLimit() {
					r.discard()
				} else if r.end-r.head > r.spillAt && !r.discardingLine && !r.oversize {
					r.startSpill()
				}
			}
		}
		if r.eof {
			r.skipLF = false
			if !r.bomChecked {
				continue
			}
			return nil, io.EOF
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

// startSpill moves a long data line's value so far out of the line buffer,
// and the rest of the line as it arrives (spill): a large event is not
// held in a buffer grown to its size and then copied.
func (r *SSEReader) startSpill() {
	line := r.buf[r.head:r.end]
	value, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok || len(value) == 0 {
		return // not data, or whether a space follows the colon is unknown yet
	}
	value, _ = bytes.CutPrefix(value, []byte(" "))
	size := len(r.data) + len(value)
	if r.dataLines > 0 {
		size++
	}
	if size > r.max {
		return // the line limit discards it
	}
	if r.dataLines > 0 {
		r.appendSpill([]byte{'\n'})
	}
	r.appendSpill(value)
	r.spilling, r.pending = true, true
	r.head, r.end, r.scan = 0, 0, 0
}

// appendSpill keeps bytes of a spilling line in chunks: joined once when
// the line ends, they cost the event's size twice at most, where growing
// one slice would allocate several times that on the way.
func (r *SSEReader) appendSpill(b []byte) {
	for len(b) > 0 {
		n := len(r.spillChunks)
		if n == 0 || len(r.spillChunks[n-1]) == cap(r.spillChunks[n-1]) {
			size := min(max(r.spillLen, r.spillAt), maxSpillChunk)
			r.spillChunks = append(r.spillChunks, make([]byte, 0, size))
			n++
		}
		last := r.spillChunks[n-1]
		k := min(len(b), cap(last)-len(last))
		r.spillChunks[n-1] = append(last, b[:k]...)
		r.spillLen += k
		b = b[k:]
	}
}

// endSpill joins a finished spilling line onto the event's data.
func (r *SSEReader) endSpill() {
	out := make([]byte, len(r.data), len(r.data)+r.spillLen)
	copy(out, r.data)
	for _, c := range r.spillChunks {
		out = append(out, c...)
	}
	r.data, r.spillChunks, r.spillLen, r.spilling = out, nil, 0, false
}

// spill appends buffered bytes of a spilling data line to the event's data
// and reports whether the line ended.
func (r *SSEReader) spill() bool {
	seg := r.buf[r.head:r.end]
	i := lineEnd(seg)
	part := seg
	if i >= 0 {
		part = seg[:i]
	}
	if len(r.data)+r.spillLen+len(part) > r.max {
		r.spilling = false
		r.markOversize(int64(len(r.data) + r.spillLen + len(part)))
		if i < 0 {
			r.discardingLine = true
			r.head, r.end, r.scan = 0, 0, 0
			return false
		}
	} else {
		r.appendSpill(part)
	}
	if i < 0 {
		r.head, r.end, r.scan = 0, 0, 0
		return false
	}
	r.skipLF = seg[i] == '\r'
	r.head, r.scan = r.head+i+1, 0
	if r.spilling {
		r.endSpill()
		r.dataLines++
	}
	return true
}

// checkBOM skips a leading byte order mark, waiting for more bytes only
// while what has arrived could still be one.
func (r *SSEReader) checkBOM() {
	got := r.buf[r.head:r.end]
	if len(got) < len(bom) && !r.eof && string(got) == bom[:len(got)] {
		return
	}
	r.bomChecked = true
	if len(got) >= len(bom) && string(got[:len(bom)]) == bom {
		r.head += len(bom)
	}
}

const bom = "\xEF\xBB\xBF"

// lineEnd is the index of the first CR or LF in b, or -1.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	search := b
	if i >= 0 {
		search = b[:i]
	}
	if j := bytes.IndexByte(search, '\r'); j >= 0 {
		return j
	}
	return i
}

// take consumes the line ending at buf[at] (a CR or LF) and its terminator.
func (r *SSEReader) take(at int) []byte {
	line := r.buf[r.head:at]
	r.skipLF = r.buf[at] == '\r'
	r.head, r.scan = at+1, 0
	if r.discardingLine {
		r.discardingLine = false
		r.skipped += int64(len(line)) + 1
		return nil
	}
	if len(line) > r.lineLimit() {
		r.pending = true
		if !r.oversize {
			r.markOversize(int64(len(r.data)))
		}
		r.skipped += int64(len(line)) + 1
		return nil
	}
	return line
}

// discard drops the buffered part of an overlong line and marks its event
// oversize; the rest of the line is dropped as it arrives.
func (r *SSEReader) discard() {
	n := int64(r.end - r.head)
	if !r.discardingLine {
		r.discardingLine = true
		r.pending = true
		if !r.oversize {
			r.markOversize(int64(len(r.data)))
		}
	}
	r.skipped += n
	r.head, r.end, r.scan = 0, 0, 0
}

// fill reads more input, first making room: drop a big empty buffer,
// compact, or grow up to the line limit.
func (r *SSEReader) fill() error {
	pending := r.end - r.head
	switch {
	case pending == 0 && len(r.buf) > keptBufferSize:
		r.buf = make([]byte, initialBufferSize)
		r.head, r.end = 0, 0
	case pending == 0:
		r.head, r.end = 0, 0
	case r.end == len(r.buf) && r.head > 0:
		copy(r.buf, r.buf[r.head:r.end])
		r.head, r.end = 0, pending
	case r.end == len(r.buf):
		size := 2 * len(r.buf)
		if limit := r.lineLimit() + 1; size > limit {
			size = max(limit, len(r.buf)+1)
		}
		grown := make([]byte, size)
		copy(grown, r.buf[r.head:r.end])
		r.buf, r.head, r.end = grown, 0, pending
	}
	for range maxEmptyReads {
		n, err := r.src.Read(r.buf[r.end:])
		r.end += n
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}
