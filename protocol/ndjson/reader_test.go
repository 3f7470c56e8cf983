package ndjson

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r *Reader) (lines []string, errs []error) {
	t.Helper()
	for i := 0; i < 1_000_000; i++ {
		line, err := r.ReadLine()
		switch {
		case err == nil:
			lines = append(lines, string(line))
		case errors.Is(err, io.EOF):
			return lines, errs
		case errors.Is(err, ErrSkipped):
			errs = append(errs, err)
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	t.Fatal("reader never reached EOF")
	return nil, nil
}

func TestReadLineSplitsAndSkipsBlanks(t *testing.T) {
	in := "{\"a\":1}\n\n   \n{\"b\":2}\r\n{\"c\":3}\n"
	lines, errs := readAll(t, NewReader(strings.NewReader(in), 0))
	want := []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}
	if strings.Join(lines, "|") != strings.Join(want, "|") || len(errs) != 0 {
		t.Fatalf("got %q %v, want %q", lines, errs, want)
	}
}

func TestReadLineOneByteReads(t *testing.T) {
	in := strings.Repeat("{\"k\":\"value\"}\n", 100)
	lines, _ := readAll(t, NewReader(iotest.OneByteReader(strings.NewReader(in)), 0))
	if len(lines) != 100 {
		t.Fatalf("got %d lines", len(lines))
	}
}

func TestOverlongLineIsSkippedAndStreamGoesOn(t *testing.T) {
	long := strings.Repeat("x", 1000)
	in := "first\n" + long + "\nsecond\n" + long + long
	lines, errs := readAll(t, NewReader(iotest.HalfReader(strings.NewReader(in)), 100))
	if strings.Join(lines, "|") != "first|second" {
		t.Fatalf("lines = %q", lines)
	}
	if len(errs) != 2 {
		t.Fatalf("errs = %v", errs)
	}
	var tl *LineTooLongError
	if !errors.As(errs[0], &tl) || tl.Size != 1000 || tl.Limit != 100 {
		t.Fatalf("first error = %#v", errs[0])
	}
	if !errors.As(errs[1], &tl) || tl.Size != 2000 {
		t.Fatalf("second error = %#v", errs[1])
	}
}

func TestLineAtExactlyTheCapIsKept(t *testing.T) {
	line := strings.Repeat("y", 100)
	lines, errs := readAll(t, NewReader(strings.NewReader(line+"\n"), 100))
	if len(lines) != 1 || lines[0] != line || len(errs) != 0 {
		t.Fatalf("lines=%d errs=%v", len(lines), errs)
	}
}

func TestTruncatedTailIsReported(t *testing.T) {
	lines, errs := readAll(t, NewReader(strings.NewReader("{\"a\":1}\n{\"half"), 0))
	var te *TruncatedLineError
	if len(lines) != 1 || len(errs) != 1 || !errors.As(errs[0], &te) || te.Size != 6 {
		t.Fatalf("lines=%q errs=%v", lines, errs)
	}
}

func TestLargeLineCrossesBuffers(t *testing.T) {
	big := strings.Repeat("z", 3*maxBufferSize+17)
	in := "a\n" + big + "\nb\n"
	lines, errs := readAll(t, NewReader(strings.NewReader(in), 0))
	if len(errs) != 0 || len(lines) != 3 || lines[1] != big || lines[2] != "b" {
		t.Fatalf("errs=%v n=%d", errs, len(lines))
	}
}

func TestReturnedLinesAreOwned(t *testing.T) {
	r := NewReader(strings.NewReader("aaa\nbbb\n"), 0)
	first, _ := r.ReadLine()
	_, _ = r.ReadLine()
	if string(first) != "aaa" {
		t.Fatalf("first line changed to %q", first)
	}
}

// errAfter fails once mid-stream, as a read deadline would, then continues.
type errAfter struct {
	r      io.Reader
	failAt int
	n      int
	failed bool
}

var errTransient = errors.New("transient")

func (e *errAfter) Read(p []byte) (int, error) {
	if !e.failed && e.n >= e.failAt {
		e.failed = true
		return 0, errTransient
	}
	if len(p) > 3 {
		p = p[:3]
	}
	n, err := e.r.Read(p)
	e.n += n
	return n, err
}

func TestReaderResumesAfterTransientError(t *testing.T) {
	src := &errAfter{r: strings.NewReader("hello\nworld\n"), failAt: 8}
	r := NewReader(src, 0)
	var got []string
	for {
		line, err := r.ReadLine()
		if errors.Is(err, errTransient) {
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	if strings.Join(got, ",") != "hello,world" {
		t.Fatalf("got %q", got)
	}
}

func TestWriterRejectsNewlineAndWritesWholeLines(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.WriteLine([]byte("a\nb")); !errors.Is(err, ErrNewlineInLine) {
		t.Fatalf("err = %v", err)
	}
	if err := w.WriteLine([]byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "{\"x\":1}\n" {
		t.Fatalf("wrote %q", buf.String())
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n\n{\"b\":2}"), 8)
	f.Add([]byte("\r\n\r\nxx\r"), 1)
	f.Add(bytes.Repeat([]byte("q"), 300), 50)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max <= 0 || max > 1<<16 {
			max = 64
		}
		r := NewReader(iotest.HalfReader(bytes.NewReader(data)), max)
		var total int
		for i := 0; ; i++ {
			if i > len(data)+2 {
				t.Fatal("reader did not terminate")
			}
			line, err := r.ReadLine()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil && !errors.Is(err, ErrSkipped) {
				t.Fatal(err)
			}
			if len(line) > max {
				t.Fatalf("line of %d bytes over cap %d", len(line), max)
			}
			if bytes.IndexByte(line, '\n') >= 0 {
				t.Fatal("line contains newline")
			}
			total += len(line)
		}
		if total > len(data) {
			t.Fatal("read more than the input")
		}
	})
}

func TestBufferedNeverReads(t *testing.T) {
	r := NewReader(iotest.HalfReader(strings.NewReader("a\n\nb\nc")), 0)
	if _, _, ok := r.Buffered(); ok {
		t.Fatal("Buffered returned a line before any read")
	}
	first, err := r.ReadLine()
	if err != nil || string(first) != "a" {
		t.Fatalf("ReadLine = %q, %v", first, err)
	}
	var got []string
	for {
		line, err, ok := r.Buffered()
		if !ok {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	rest, _ := readAll(t, r)
	all := append(got, rest...)
	if strings.Join(all, ",") != "b" {
		t.Fatalf("after a: buffered %q then read %q", got, rest)
	}
}

// chunkReader returns one scripted chunk per Read (cut to the room given).
type chunkReader struct{ chunks []string }

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// The working buffer starts small, takes the full size as soon as a read
// fills it, and goes back to small once the stream looks idle (a small
// read that ends on a line end), which is what an idle reader holds.
func TestBufferFollowsTheStream(t *testing.T) {
	line := strings.Repeat("x", 99) + "\n"
	burst := strings.Repeat(line, 2000)
	tools := `{"tools":"` + strings.Repeat("t", 10<<10) + `"}`
	src := &chunkReader{chunks: []string{"{\"init\":1}\n", burst, tools + "\n", "{\"result\":1}\n"}}
	r := NewReader(src, 0)
	if len(r.buf) != minBufferSize {
		t.Fatalf("new reader holds %d bytes, want %d", len(r.buf), minBufferSize)
	}
	read := func(want string) {
		t.Helper()
		got, err := r.ReadLine()
		if err != nil || string(got) != want {
			t.Fatalf("ReadLine = %.20q, %v; want %.20q", got, err, want)
		}
	}
	read(`{"init":1}`)
	if len(r.buf) != minBufferSize {
		t.Fatalf("after a small read: %d bytes, want %d", len(r.buf), minBufferSize)
	}
	largest := 0
	for range 2000 {
		read(line[:99])
		largest = max(largest, len(r.buf))
	}
	if largest != maxBufferSize {
		t.Fatalf("a burst read with at most %d bytes, want %d", largest, maxBufferSize)
	}
	read(tools)
	read(`{"result":1}`)
	if len(r.buf) != minBufferSize {
		t.Fatalf("idle after a 10 KiB line: %d bytes, want %d", len(r.buf), minBufferSize)
	}
	if _, err := r.ReadLine(); err != io.EOF {
		t.Fatalf("after the last line: %v, want EOF", err)
	}
	if len(r.buf) != minBufferSize {
		t.Fatalf("idle after a burst: %d bytes, want %d", len(r.buf), minBufferSize)
	}
}

// A line longer than the small buffer grows it; one longer than the full
// buffer still goes to a one-off buffer and comes back whole.
func TestBufferGrowsForLongLines(t *testing.T) {
	mid := strings.Repeat("m", 3*minBufferSize)
	long := strings.Repeat("l", 2*maxBufferSize)
	src := &chunkReader{chunks: []string{"a\n", mid + "\n", "b\n" + long + "\nc\n"}}
	lines, errs := readAll(t, NewReader(iotest.HalfReader(src), 0))
	if len(errs) != 0 || strings.Join(lines, "|") != "a|"+mid+"|b|"+long+"|c" {
		t.Fatalf("errs=%v lines=%d", errs, len(lines))
	}
}
