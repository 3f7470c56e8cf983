package runview

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/testenv"
)

func TestSpinnerDrawsAndErases(t *testing.T) {
	var out, errs strings.Builder
	scr := newScreen(&out, &errs, true, true)
	scr.wait("thinking…")
	scr.tick()
	scr.tick()
	scr.line("text")
	if got, want := errs.String(), "\r⠋ thinking…\x1b[K\r⠙ thinking…\x1b[K\r\x1b[K"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
	scr.tick() // the write ended the wait
	if strings.Count(errs.String(), "⠹") != 0 || out.String() != "text\n" {
		t.Errorf("stderr %q, stdout %q", errs.String(), out.String())
	}
}

func TestSpinnerWaitsForTheEndOfAPartialLine(t *testing.T) {
	var out, errs strings.Builder
	scr := newScreen(&out, &errs, true, true)
	scr.text("Hello")
	scr.wait("thinking…")
	scr.tick()
	if errs.String() != "" {
		t.Errorf("spinner drawn over a partial line: %q", errs.String())
	}
	scr.endLine()
	scr.wait("thinking…")
	scr.tick()
	if out.String() != "Hello\n" || !strings.Contains(errs.String(), "thinking…") {
		t.Errorf("stdout %q, stderr %q", out.String(), errs.String())
	}
}

func TestQuestionHoldsOtherOutput(t *testing.T) {
	var out, errs strings.Builder
	scr := newScreen(&out, &errs, false, false)
	release := scr.ask("Allow? ")
	scr.line("later")
	scr.note("a note")
	if out.String() != "" || errs.String() != "Allow? " {
		t.Errorf("while asking: stdout %q, stderr %q", out.String(), errs.String())
	}
	release("(withdrawn)\n")
	if out.String() != "later\n" || errs.String() != "Allow? (withdrawn)\na note\n" {
		t.Errorf("after: stdout %q, stderr %q", out.String(), errs.String())
	}
}

func TestSpinnerGoroutineStops(t *testing.T) {
	var errs strings.Builder
	scr := newScreen(&strings.Builder{}, &errs, false, true)
	s := startSpinner(scr, 1)
	scr.wait("x")
	s.stop() // goleak in TestMain checks the goroutine is gone
	var nilSpinner *spinner
	nilSpinner.stop()
}

// Machine output is buffered: a line is not written at once, but the
// flush timer writes it soon after, a question flushes what led to it,
// and close flushes the rest; afterwards writes go straight through.
func TestBufferedOutFlushes(t *testing.T) {
	out := &testenv.SyncBuffer{}
	var errs strings.Builder
	scr := newScreen(out, &errs, false, false)
	scr.bufferOut()
	scr.raw([]byte(`{"n":1}`))
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "{\"n\":1}\n" {
		if time.Now().After(deadline) {
			t.Fatalf("not flushed: %q", out.String())
		}
		time.Sleep(time.Millisecond)
	}
	scr.raw([]byte(`{"n":2}`))
	release := scr.ask("Allow? ")
	if out.String() != "{\"n\":1}\n{\"n\":2}\n" {
		t.Fatalf("a question did not flush: %q", out.String())
	}
	release("y\n")
	scr.raw([]byte(`{"n":3}`))
	scr.close()
	if got := out.String(); got != "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n" {
		t.Fatalf("after close: %q", got)
	}
	scr.raw([]byte(`{"n":4}`))
	if got := out.String(); !strings.HasSuffix(got, "{\"n\":4}\n") {
		t.Fatalf("after close, not straight through: %q", got)
	}
}

// A line that fails to encode is not written, buffered or not, and the
// lines around it are whole: nothing half-encoded reaches out.
func TestRawAppendWritesNothingOnError(t *testing.T) {
	for _, buffered := range []bool{true, false} {
		out := &testenv.SyncBuffer{}
		scr := newScreen(out, &strings.Builder{}, false, false)
		if buffered {
			scr.bufferOut()
		}
		ok := func(s string) func([]byte) ([]byte, error) {
			return func(dst []byte) ([]byte, error) { return append(dst, s...), nil }
		}
		failing := func(dst []byte) ([]byte, error) { return append(dst, `{"half":`...), errors.New("cannot encode") }
		if err := scr.rawAppend(ok(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		if err := scr.rawAppend(failing); err == nil {
			t.Fatal("the encoder's error was not returned")
		}
		if err := scr.rawAppend(ok(`{"n":2}`)); err != nil {
			t.Fatal(err)
		}
		scr.close()
		if got := out.String(); got != "{\"n\":1}\n{\"n\":2}\n" {
			t.Fatalf("buffered %v: %q", buffered, got)
		}
	}
}

// After a second the spinner shows how long the run has taken.
func TestSpinnerShowsTheTimeTaken(t *testing.T) {
	var out, errs strings.Builder
	scr := newScreen(&out, &errs, true, true)
	clock := scr.began
	scr.now = func() time.Time { return clock }
	scr.wait("thinking…")
	clock = clock.Add(900 * time.Millisecond)
	scr.tick()
	clock = clock.Add(13 * time.Second)
	scr.tick()
	clock = clock.Add(2 * time.Minute)
	scr.tick()
	want := "\r⠋ thinking…\x1b[K\r⠙ thinking… 13s\x1b[K\r⠹ thinking… 2m13s\x1b[K"
	if got := errs.String(); got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

// Styled notes reach err without their styling when err is not a
// terminal, though out is one.
func TestPlainErrStripsStyling(t *testing.T) {
	var out, errs strings.Builder
	scr := newScreen(&out, &errs, true, false)
	scr.plainErr = true
	st := style{true}
	scr.note(st.red("✗ failed"))
	scr.line(st.green("⏺") + " Bash")
	if got := errs.String(); got != "✗ failed\n" {
		t.Errorf("stderr %q", got)
	}
	if !strings.Contains(out.String(), "\x1b[32m⏺\x1b[0m") {
		t.Errorf("stdout lost its styling: %q", out.String())
	}
}
