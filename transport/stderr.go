package transport

import (
	"bytes"
	"strings"
)

// stderrLineMax is the longest stderr line handed to Command.Stderr whole.
const stderrLineMax = 16 << 10

// stderrReadSize is the read buffer for stderr: mostly quiet, and read by
// one goroutine per child for the child's whole life.
const stderrReadSize = 1 << 10

// stderrLines cuts stderr into lines for Command.Stderr, a line longer
// than stderrLineMax in pieces of that size. It holds only the line in
// progress, so a quiet child costs its read buffer and no more.
type stderrLines struct {
	emit func(string)
	part []byte // the line so far, without its newline
}

// write takes the next bytes of the stream.
func (s *stderrLines) write(p []byte) {
	for len(p) > 0 {
		chunk, rest, ended := bytes.Cut(p, []byte{'\n'})
		if room := stderrLineMax - len(s.part); len(chunk) > room {
			s.part = append(s.part, chunk[:room]...)
			s.send(false)
			p = p[room:]
			continue
		}
		s.part = append(s.part, chunk...)
		if !ended {
			return
		}
		s.send(true)
		p = rest
	}
}

// flush passes on a last line that had no newline.
func (s *stderrLines) flush() {
	if len(s.part) > 0 {
		s.send(true)
	}
}

// send passes on the line so far: trimmed if whole, as is if a piece.
func (s *stderrLines) send(whole bool) {
	line := string(s.part)
	if whole {
		line = strings.TrimRight(line, "\r")
	}
	s.emit(line)
	s.part = s.part[:0]
	if cap(s.part) > stderrReadSize {
		s.part = nil // a long line's buffer is not kept
	}
}
