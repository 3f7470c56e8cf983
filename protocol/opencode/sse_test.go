package opencode_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	oc "github.com/tetherhq/tether/protocol/opencode"
)

// readers gives the same input whole, one byte per read, and half a buffer
// per read, so every boundary (a CR before its LF, a BOM, a long line) is
// crossed by a read somewhere.
func readers(in string) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"whole":   func() io.Reader { return strings.NewReader(in) },
		"onebyte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
		"half":    func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
		"dataerr": func() io.Reader { return iotest.DataErrReader(strings.NewReader(in)) },
	}
}

type sseResult struct {
	events []oc.SSEEvent
	errs   []error
}

func readAllSSE(t *testing.T, r *oc.SSEReader) sseResult {
	t.Helper()
	var res sseResult
	for range 100_000 {
		ev, err := r.Next()
		switch {
		case err == nil:
			res.events = append(res.events, ev)
		case err == io.EOF:
			// Calling again after the end keeps returning io.EOF.
			if _, again := r.Next(); again != io.EOF {
				t.Fatalf("Next after io.EOF = %v, want io.EOF", again)
			}
			return res
		case errors.Is(err, oc.ErrSkipped):
			res.errs = append(res.errs, err)
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	t.Fatal("the reader never reached io.EOF")
	return res
}

func datas(evs []oc.SSEEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Data)
	}
	return out
}

func TestSSEReaderParsesTheStandardsExamples(t *testing.T) {
	cases := []struct {
		name string
		in   string
		data []string
		ids  []string
		errs int // TruncatedEventErrors expected
	}{
		{"multi-line data", "data: YHOO\ndata: +2\ndata: 10\n\n", []string{"YHOO\n+2\n10"}, []string{""}, 0},
		{
			"comments and ids",
			": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
			[]string{"first event", "second event", " third event"}, []string{"1", "", ""}, 0,
		},
		{"empty data and a cut last block", "data\n\ndata\ndata\n\ndata:", []string{"", "\n"}, []string{"", ""}, 1},
		{"space after colon optional", "data:test\n\ndata: test\n\n", []string{"test", "test"}, []string{"", ""}, 0},
		{"blank lines alone dispatch nothing", "\n\n\nevent: x\n\n\n", nil, nil, 0},
		{"unknown fields ignored", "foo: bar\ndata: a\nbaz\n\n", []string{"a"}, []string{""}, 0},
		{"field without colon", "data\n\n", []string{""}, []string{""}, 0},
		{"value keeps later colons", "data: a: b:c\n\n", []string{"a: b:c"}, []string{""}, 0},
		{"id with NUL ignored", "id: 7\ndata: a\n\nid: x\x00y\ndata: b\n\n", []string{"a", "b"}, []string{"7", "7"}, 0},
	}
	for _, c := range cases {
		for how, mk := range readers(c.in) {
			t.Run(c.name+"/"+how, func(t *testing.T) {
				res := readAllSSE(t, oc.NewSSEReader(mk(), 0))
				if got := datas(res.events); strings.Join(got, "|") != strings.Join(c.data, "|") || len(got) != len(c.data) {
					t.Fatalf("data = %q, want %q", got, c.data)
				}
				for i, ev := range res.events {
					if ev.ID != c.ids[i] {
						t.Errorf("event %d id = %q, want %q", i, ev.ID, c.ids[i])
					}
				}
				if len(res.errs) != c.errs {
					t.Fatalf("errors = %v, want %d truncation", res.errs, c.errs)
				}
				for _, err := range res.errs {
					var te *oc.TruncatedEventError
					if !errors.As(err, &te) {
						t.Fatalf("error %v is not a *TruncatedEventError", err)
					}
				}
			})
		}
	}
}

func TestSSEReaderLineEndings(t *testing.T) {
	for name, in := range map[string]string{
		"LF":    "data: a\ndata: b\n\ndata: c\n\n",
		"CRLF":  "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n",
		"CR":    "data: a\rdata: b\r\rdata: c\r\r",
		"mixed": "data: a\r\ndata: b\r\n\rdata: c\n\r\n",
	} {
		for how, mk := range readers(in) {
			t.Run(name+"/"+how, func(t *testing.T) {
				res := readAllSSE(t, oc.NewSSEReader(mk(), 0))
				if got := datas(res.events); len(got) != 2 || got[0] != "a\nb" || got[1] != "c" || len(res.errs) != 0 {
					t.Fatalf("got %q, errors %v; want [a\\nb c]", got, res.errs)
				}
			})
		}
	}
}

func TestSSEReaderNameIDAndRetry(t *testing.T) {
	in := "retry: 1500\nevent: ping\nid: 9\ndata: 1\n\ndata: 2\n\nretry: 10a\nretry: 99999999999999999999\ndata: 3\n\n"
	r := oc.NewSSEReader(strings.NewReader(in), 0)
	res := readAllSSE(t, r)
	if len(res.events) != 3 {
		t.Fatalf("events = %+v", res.events)
	}
	if res.events[0].Name != "ping" || res.events[1].Name != "" {
		t.Errorf("names = %q, %q; the event name must not outlive its event", res.events[0].Name, res.events[1].Name)
	}
	if res.events[1].ID != "9" || res.events[2].ID != "9" || r.LastEventID() != "9" {
		t.Errorf("ids = %q, %q, last %q; the last event id persists", res.events[1].ID, res.events[2].ID, r.LastEventID())
	}
	if d, ok := r.Retry(); !ok || d != 1500*time.Millisecond {
		t.Errorf("retry = %v, %v; want 1.5s (invalid values are ignored)", d, ok)
	}
}

func TestSSEReaderSkipsALeadingBOMOnly(t *testing.T) {
	in := "\xEF\xBB\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\ndata: c\n\n"
	for how, mk := range readers(in) {
		t.Run(how, func(t *testing.T) {
			res := readAllSSE(t, oc.NewSSEReader(mk(), 0))
			// The second BOM is inside the stream: it makes its line an
			// unknown field, so the event has no data.
			if got := datas(res.events); len(got) != 2 || got[0] != "a" || got[1] != "c" {
				t.Fatalf("got %q, want [a c]", got)
			}
		})
	}
	// A stream shorter than a BOM that starts like one is not swallowed.
	res := readAllSSE(t, oc.NewSSEReader(strings.NewReader("\xEF\xBB"), 0))
	if len(res.errs) != 1 {
		t.Fatalf("a cut stream of 2 bytes should be a truncated event, got %v", res.errs)
	}
}

func TestSSEReaderDoesNotWaitForMoreThanItNeeds(t *testing.T) {
	// A live stream stops after an event: the event must come out without
	// another read (which would block).
	for _, in := range []string{"data: a\n\n", "data: a\r\n\r\n", "data: a\r\r", "\xEF\xBB\xBFdata: a\n\n"} {
		src := &stallingReader{data: []byte(in)}
		r := oc.NewSSEReader(src, 0)
		ev, err := r.Next()
		if err != nil || string(ev.Data) != "a" {
			t.Fatalf("%q: got %q, %v", in, ev.Data, err)
		}
	}
}

// stallingReader gives its data, then fails: a read past the data stands
// for one that would block on a live stream.
type stallingReader struct {
	data []byte
}

func (s *stallingReader) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, errors.New("read past the available data")
	}
	n := copy(p, s.data)
	s.data = s.data[n:]
	return n, nil
}

func TestSSEReaderCapsEventSize(t *testing.T) {
	const limit = 100
	big := strings.Repeat("x", limit+1)
	exact := strings.Repeat("y", limit)
	in := "data: before\n\n" +
		"data: " + big + "\ndata: more\n\n" + // one line over the cap
		"data: " + exact + "\n\n" + // exactly at the cap: fine
		"data: " + exact[:60] + "\ndata: " + exact[:60] + "\n\n" + // lines that add up over the cap
		": " + strings.Repeat("c", 3*limit) + "\ndata: with a long comment\n\n" + // a long line of any kind
		"data: after\n\n"
	for how, mk := range readers(in) {
		t.Run(how, func(t *testing.T) {
			res := readAllSSE(t, oc.NewSSEReader(mk(), limit))
			want := []string{"before", exact, "after"}
			if got := datas(res.events); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("got %q, want %q", got, want)
			}
			if len(res.errs) != 3 {
				t.Fatalf("errors = %v, want 3 oversize events", res.errs)
			}
			for _, err := range res.errs {
				var tl *oc.EventTooLargeError
				if !errors.As(err, &tl) || tl.Limit != limit || tl.Size <= limit {
					t.Fatalf("error %v: want *EventTooLargeError with limit %d and size over it", err, limit)
				}
			}
		})
	}
}

func TestSSEReaderReportsATruncatedEventOnce(t *testing.T) {
	cases := map[string]int{ // input → truncations
		"":                                  0,
		"\n\n":                              0,
		": just a comment":                  0,
		"data: a\n\ndata: b\n":              1,
		"data: a\n\ndata: b":                1,
		"event: x\n":                        1,
		"data: a\r":                         1,
		"data: " + strings.Repeat("z", 500): 1, // oversize and cut
	}
	for in, want := range cases {
		for how, mk := range readers(in) {
			res := readAllSSE(t, oc.NewSSEReader(mk(), 100))
			if len(res.errs) != want {
				t.Errorf("%q/%s: errors %v, want %d", in, how, res.errs, want)
			}
		}
	}
}

// flakyReader fails its first read after each chunk with a temporary error.
type flakyReader struct {
	chunks []string
	failed bool
}

var errTemporary = errors.New("temporary")

func (f *flakyReader) Read(p []byte) (int, error) {
	if len(f.chunks) == 0 {
		return 0, io.EOF
	}
	if !f.failed {
		f.failed = true
		return 0, errTemporary
	}
	f.failed = false
	n := copy(p, f.chunks[0])
	f.chunks[0] = f.chunks[0][n:]
	if f.chunks[0] == "" {
		f.chunks = f.chunks[1:]
	}
	return n, nil
}

func TestSSEReaderKeepsItsStateAcrossReadErrors(t *testing.T) {
	src := &flakyReader{chunks: []string{"data: a", "bc\r", "\ndata: d\n", "\n", "data: e\n\n"}}
	r := oc.NewSSEReader(src, 0)
	var got []string
	for range 100 {
		ev, err := r.Next()
		if errors.Is(err, errTemporary) {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(ev.Data))
	}
	if strings.Join(got, "|") != "abc\nd|e" {
		t.Fatalf("got %q, want [abc\\nd e]", got)
	}
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestSSEReaderGivesUpOnASourceThatNeverProgresses(t *testing.T) {
	if _, err := oc.NewSSEReader(emptyReader{}, 0).Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v, want io.ErrNoProgress", err)
	}
}

func TestSSEReaderDataBelongsToTheCaller(t *testing.T) {
	r := oc.NewSSEReader(strings.NewReader("data: first\n\ndata: second\n\n"), 0)
	a, _ := r.Next()
	b, _ := r.Next()
	if string(a.Data) != "first" || string(b.Data) != "second" {
		t.Fatalf("got %q %q: reading on changed an event already returned", a.Data, b.Data)
	}
}

func TestAppendSSERoundTrips(t *testing.T) {
	evs := []oc.SSEEvent{
		{ID: "1", Name: "msg", Data: []byte("one line")},
		{ID: "1", Data: []byte("two\nlines")},
		{ID: "2", Data: []byte("")},
		{ID: "2", Data: []byte(" leading space\n\ntrailing newline\n")},
	}
	var buf []byte
	for _, ev := range evs {
		var err error
		if buf, err = oc.AppendSSE(buf, ev); err != nil {
			t.Fatal(err)
		}
	}
	res := readAllSSE(t, oc.NewSSEReader(bytes.NewReader(buf), 0))
	if len(res.events) != len(evs) {
		t.Fatalf("read back %d events from %q", len(res.events), buf)
	}
	for i, ev := range res.events {
		if ev.ID != evs[i].ID || ev.Name != evs[i].Name || !bytes.Equal(ev.Data, evs[i].Data) {
			t.Errorf("event %d: read back %+v, wrote %+v", i, ev, evs[i])
		}
	}
}

func TestWriteSSERefusesWhatAStreamCannotCarry(t *testing.T) {
	for _, ev := range []oc.SSEEvent{
		{ID: "a\nb"}, {ID: "a\x00"}, {Name: "x\ry"}, {Data: []byte("a\rb")},
	} {
		var buf bytes.Buffer
		if err := oc.WriteSSE(&buf, ev); !errors.Is(err, oc.ErrInvalidSSEField) || buf.Len() != 0 {
			t.Errorf("%+v: err %v, wrote %q; want ErrInvalidSSEField and nothing written", ev, err, buf.Bytes())
		}
	}
}

// A data line past the spill threshold (32 KiB) goes to the event's data as
// it arrives; the result is the same as for short lines.
func TestSSEReaderLargeDataLines(t *testing.T) {
	big := strings.Repeat("0123456789", 20_000)                      // 200 KB
	in := "data: small\ndata: " + big + "\r\ndata:" + big + "\n\n" + // two spilled lines after a short one
		"data: " + big + big + big + "\n\n" + // 600 KB: over a 500 KB cap while spilling
		"data: after\n\n" +
		"data: " + big // cut by the end of the stream
	for how, mk := range readers(in) {
		t.Run(how, func(t *testing.T) {
			res := readAllSSE(t, oc.NewSSEReader(mk(), 500_000))
			want := []string{"small\n" + big + "\n" + big, "after"}
			if got := datas(res.events); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
				t.Fatalf("got %d events (%d bytes first), want %d", len(got), len(strings.Join(got, "")), len(want))
			}
			var tl *oc.EventTooLargeError
			var te *oc.TruncatedEventError
			if len(res.errs) != 2 || !errors.As(res.errs[0], &tl) || !errors.As(res.errs[1], &te) || te.Size < int64(len(big)) {
				t.Fatalf("errors = %v, want too large then truncated", res.errs)
			}
		})
	}
}
