package runview

import (
	"bufio"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"
)

// screen is the only writer of the person's terminal. The conversation goes
// to out; the spinner, questions, notes and logs go to err. Both usually
// land on the same screen, so one mutex orders every write, the spinner's
// frame is erased before anything is written over it, and while a question
// waits for its answer everything else is held back and written after.
type screen struct {
	mu       sync.Mutex
	out, err io.Writer
	// buffered holds out's writes when a program reads them (--json,
	// --raw into a pipe or a file): a line each was a system call per
	// event, a third of what printing --json cost. A timer flushes it
	// flushDelay after the first write it holds, so a reader downstream
	// still sees events as they come; close flushes the rest.
	buffered    *bufio.Writer
	direct      io.Writer // out itself, under buffered
	flushing    *time.Timer
	outTerminal bool
	midLine     bool    // out ends inside a line
	prompting   bool    // a question is on err, waiting for its answer
	held        []piece // written while a question was up
	spin        spinState
	// now and began time the run, which the spinner shows once it has
	// taken a second: progress on a long turn, not a frozen label.
	now   func() time.Time
	began time.Time
	// plainErr strips styling from what goes to err: err is not a
	// terminal (a file, a pipe) though out is one and is styled.
	plainErr bool
}

// piece is one write: to out or err, optionally starting on a fresh line.
type piece struct {
	toOut bool
	fresh bool // end out's partial line first
	text  string
}

// spinState is the waiting indicator; the spinner goroutine animates it.
type spinState struct {
	enabled bool // err is a terminal
	waiting bool // nothing is being written: frames may be drawn
	shown   bool // a frame is on the screen now
	label   string
	frame   int
}

// sgrRE matches an ANSI styling sequence.
var sgrRE = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// spinFrames are the spinner's frames, one rune each.
const spinFrames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

// flushDelay is how long out's output may wait in the buffer.
const flushDelay = 10 * time.Millisecond

func newScreen(out, err io.Writer, outTerminal, spinner bool) *screen {
	return &screen{out: out, err: err, outTerminal: outTerminal, spin: spinState{enabled: spinner},
		now: time.Now, began: time.Now()}
}

// bufferOut buffers out's writes until close (see buffered).
func (s *screen) bufferOut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.direct = s.out
	s.buffered = bufio.NewWriterSize(s.out, 64<<10)
	s.out = s.buffered
}

// flush writes out what the buffer holds.
func (s *screen) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *screen) flushLocked() {
	if s.buffered == nil {
		return
	}
	if s.flushing != nil {
		s.flushing.Stop()
		s.flushing = nil
	}
	_ = s.buffered.Flush()
}

// close flushes the buffer for good: later writes, and a flush timer
// that fired meanwhile, go straight through.
func (s *screen) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buffered == nil {
		return
	}
	s.flushLocked()
	s.buffered = nil
	s.out = s.direct
}

// text writes streamed text to out as is.
func (s *screen) text(t string) { s.emit(piece{toOut: true, text: t}) }

// line writes a whole line to out, first ending a partial one.
func (s *screen) line(t string) { s.emit(piece{toOut: true, fresh: true, text: t + "\n"}) }

// endLine ends out's partial line, if any.
func (s *screen) endLine() { s.emit(piece{toOut: true, fresh: true}) }

// raw writes one NDJSON line to out.
func (s *screen) raw(b []byte) {
	_ = s.rawAppend(func(dst []byte) ([]byte, error) { return append(dst, b...), nil })
}

// rawAppend writes the NDJSON line appendLine appends to a buffer. When
// out is buffered the line is encoded straight into the buffer's free
// space, so machine output is not copied once more on its way out. A line
// appendLine fails to write is not written, and its error returned.
func (s *screen) rawAppend(appendLine func([]byte) ([]byte, error)) error {
	s.mu.Lock()
	if !s.prompting && s.buffered != nil {
		defer s.mu.Unlock()
		b, err := appendLine(s.buffered.AvailableBuffer())
		if err != nil {
			return err
		}
		s.eraseLocked()
		s.spin.waiting = false
		_, _ = s.buffered.Write(append(b, '\n'))
		s.midLine = false
		s.scheduleFlushLocked()
		return nil
	}
	s.mu.Unlock()
	b, err := appendLine(nil)
	if err != nil {
		return err
	}
	s.emit(piece{toOut: true, text: string(b) + "\n"})
	return nil
}

// scheduleFlushLocked arranges for buffered output to be flushed soon.
func (s *screen) scheduleFlushLocked() {
	if s.buffered != nil && s.flushing == nil && s.buffered.Buffered() > 0 {
		s.flushing = time.AfterFunc(flushDelay, s.flush)
	}
}

// note writes a line to err.
func (s *screen) note(t string) { s.emit(piece{text: t + "\n"}) }

// Write makes the screen's err side an io.Writer (for the logger).
func (s *screen) Write(p []byte) (int, error) {
	s.emit(piece{text: string(p)})
	return len(p), nil
}

// emit writes under the lock, or holds the piece while a question is up.
func (s *screen) emit(p piece) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prompting {
		s.held = append(s.held, p)
		return
	}
	s.writeLocked(p)
}

func (s *screen) writeLocked(p piece) {
	s.eraseLocked()
	s.spin.waiting = false
	if p.fresh || (!p.toOut && s.outTerminal) {
		// On a shared terminal a note must not continue the text's line.
		s.endLineLocked()
	}
	if p.text == "" {
		return
	}
	if !p.toOut {
		if s.plainErr {
			p.text = sgrRE.ReplaceAllString(p.text, "")
		}
		io.WriteString(s.err, p.text)
		return
	}
	io.WriteString(s.out, p.text)
	s.midLine = !strings.HasSuffix(p.text, "\n")
	s.scheduleFlushLocked()
}

func (s *screen) endLineLocked() {
	if s.midLine {
		io.WriteString(s.out, "\n")
		s.midLine = false
	}
}

// wait shows the spinner with label until the next write. On a shared
// terminal it stays hidden while out is mid-line: erasing its frame would
// erase the text too.
func (s *screen) wait(label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spin.label = label
	s.spin.waiting = s.spin.enabled && !(s.outTerminal && s.midLine)
}

// tick draws the next spinner frame, if one is due.
func (s *screen) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.spin.waiting || s.prompting {
		return
	}
	frames := []rune(spinFrames)
	f := frames[s.spin.frame%len(frames)]
	s.spin.frame++
	label := s.spin.label
	if took := s.now().Sub(s.began); took >= time.Second {
		label += " " + took.Truncate(time.Second).String()
	}
	io.WriteString(s.err, "\r"+string(f)+" "+label+"\x1b[K")
	s.spin.shown = true
}

// idle hides the spinner for good (until the next wait).
func (s *screen) idle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eraseLocked()
	s.spin.waiting = false
}

func (s *screen) eraseLocked() {
	if s.spin.shown {
		io.WriteString(s.err, "\r\x1b[K")
		s.spin.shown = false
	}
}

// ask puts a question on err and holds other output until release, which
// first writes tail to finish the question's line (the terminal's echo of
// an answer does that by itself). Only one question may be up at a time;
// the approver serialises them.
func (s *screen) ask(question string) (release func(tail string)) {
	s.mu.Lock()
	s.flushLocked() // what led to the question first
	s.writeLocked(piece{text: question})
	s.prompting = true
	s.mu.Unlock()
	return func(tail string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.writeLocked(piece{text: tail})
		s.prompting = false
		held := s.held
		s.held = nil
		for _, p := range held {
			s.writeLocked(p)
		}
	}
}
