package opencode_test

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"testing"

	oc "github.com/tetherhq/tether/protocol/opencode"
)

// sseItem is one thing a reader returned: an event, or the kind of error.
type sseItem struct {
	err string
	ev  oc.SSEEvent
}

func sameOutcome(a, b []sseItem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].err != b[i].err || a[i].ev.ID != b[i].ev.ID || a[i].ev.Name != b[i].ev.Name || !bytes.Equal(a[i].ev.Data, b[i].ev.Data) {
			return false
		}
	}
	return true
}

// sseOutcome is what a reader made of a stream, in order.
func sseOutcome(t *testing.T, r *oc.SSEReader) []sseItem {
	t.Helper()
	var out []sseItem
	for range 1 << 16 {
		ev, err := r.Next()
		var tooLarge *oc.EventTooLargeError
		var truncated *oc.TruncatedEventError
		switch {
		case err == nil:
			if len(ev.Data) > r.MaxEventSize() {
				t.Fatalf("event of %d bytes over the cap of %d", len(ev.Data), r.MaxEventSize())
			}
			if bytes.IndexByte(ev.Data, '\r') >= 0 || bytes.ContainsAny([]byte(ev.ID+ev.Name), "\r\n") {
				t.Fatalf("a line break survived in %+v", ev)
			}
			out = append(out, sseItem{ev: ev})
		case err == io.EOF:
			return out
		case errors.As(err, &tooLarge):
			out = append(out, sseItem{err: "too large"})
		case errors.As(err, &truncated):
			out = append(out, sseItem{err: "truncated"})
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	t.Fatal("no end of stream")
	return nil
}

// choppyReader returns its data in reads of 1, 2, 3, 5 and 7 bytes in
// turn: every boundary is crossed at some offset, at a fraction of the cost
// of one-byte reads (which matters when the fuzzer minimises).
type choppyReader struct {
	data []byte
	n    int
}

func (c *choppyReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	size := [...]int{1, 2, 3, 5, 7}[c.n%5]
	c.n++
	n := copy(p[:min(len(p), size)], c.data)
	c.data = c.data[n:]
	return n, nil
}

// FuzzSSEReader: any bytes give events or typed errors, the same however
// the reads are cut, and the events read back the same once written.
func FuzzSSEReader(f *testing.F) {
	for _, name := range sseCaptures(f) {
		data, err := readTestdata(name)
		if err != nil {
			f.Fatal(err)
		}
		// The first events: small seeds keep the fuzzer's minimisation fast.
		f.Add(data[:min(len(data), 600)], 0)
	}
	f.Add([]byte("\xEF\xBB\xBFid: 1\r\nevent: x\r\ndata: a\r\ndata:\r\n\r\n: c\rretry: 10\r\rdata"), 8)
	f.Add([]byte("data: "+string(bytes.Repeat([]byte("x"), 300))+"\n\ndata: y\n\n"), 64)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		spillAt := 1 + int(uint(max)>>9)%64 // low thresholds reach the spill path
		max = max % 512                     // small caps reach the oversize paths
		whole := sseOutcome(t, oc.NewSSEReader(bytes.NewReader(in), max))
		cut := sseOutcome(t, oc.NewSSEReader(&choppyReader{data: in}, max))
		if !sameOutcome(whole, cut) {
			t.Fatalf("whole reads: %+v\nshort reads: %+v", whole, cut)
		}
		spilled := sseOutcome(t, oc.NewSSEReaderSpillingAt(&choppyReader{data: in}, max, spillAt))
		if !sameOutcome(whole, spilled) {
			t.Fatalf("without spilling: %+v\nspilling from %d bytes: %+v", whole, spillAt, spilled)
		}

		var events []oc.SSEEvent
		r := oc.NewSSEReader(bytes.NewReader(in), max)
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err == nil {
				events = append(events, ev)
			}
		}
		var written []byte
		for _, ev := range events {
			var err error
			if written, err = oc.AppendSSE(written, ev); err != nil {
				t.Fatalf("a read event cannot be written: %+v: %v", ev, err)
			}
		}
		again := oc.NewSSEReader(bytes.NewReader(written), 0)
		for i, want := range events {
			got, err := again.Next()
			if err != nil || got.ID != want.ID || got.Name != want.Name || !bytes.Equal(got.Data, want.Data) {
				t.Fatalf("event %d read back as %+v, %v; wrote %+v", i, got, err, want)
			}
		}
		if _, err := again.Next(); err != io.EOF {
			t.Fatalf("more read back than written: %v", err)
		}
	})
}

// sseCaptures names every captured event stream in testdata.
func sseCaptures(f *testing.F) []string {
	paths, err := filepath.Glob(filepath.Join("testdata", "serve-event-*.sse"))
	if err != nil || len(paths) < 3 {
		f.Fatalf("captures: %v, %v", paths, err)
	}
	for i, p := range paths {
		paths[i] = filepath.Base(p)
	}
	return paths
}

// FuzzDecodeEvent: any data gives an event or a *DecodeError, never a
// panic; an event keeps its bytes and builds again from its payload.
func FuzzDecodeEvent(f *testing.F) {
	for _, name := range sseCaptures(f) {
		data, err := readTestdata(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if rest, ok := bytes.CutPrefix(line, []byte("data: ")); ok && !bytes.Contains(rest, []byte("plugin.added")) {
				f.Add(rest)
			}
		}
	}
	f.Add([]byte(`{"type":"message.part.updated","properties":{"sessionID":"s","time":1.5,"part":{"id":"p","sessionID":"s","messageID":"m","type":"retry","attempt":1,"error":{"name":"APIError","data":{"message":"x","isRetryable":true}},"time":{"created":1e3}}}}`))
	f.Add([]byte(`{"type":"question.asked","properties":{"id":"que_1","sessionID":"s","questions":[{"question":"q","header":"h","options":[{"label":"a","description":"d"}]}]}}`))
	f.Add([]byte(`{"type":"session.next.text.delta","properties":{"sessionID":7}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		kept := bytes.Clone(data)
		ev, err := oc.DecodeEvent(data)
		if err != nil {
			var de *oc.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, oc.ErrSkipped) || len(de.Data) > 512 {
				t.Fatalf("error %v is not a *DecodeError", err)
			}
			return
		}
		if !bytes.Equal(data, kept) {
			t.Fatal("decoding changed the data")
		}
		if !bytes.Equal(ev.Raw(), data) || ev.Type == "" || ev.Payload == nil || ev.Payload.EventType() != ev.Type {
			t.Fatalf("event %q %T from %q", ev.Type, ev.Payload, data)
		}
		_ = ev.SessionID()
		_ = ev.IsNoise()
		rebuilt, err := oc.NewEvent(ev.ID, ev.Payload)
		if err != nil {
			t.Fatalf("the payload of %q does not build an event again: %v", data, err)
		}
		if reflect.TypeOf(rebuilt.Payload) != reflect.TypeOf(ev.Payload) || rebuilt.SessionID() != ev.SessionID() {
			t.Fatalf("rebuilt %T %q from %T %q", rebuilt.Payload, rebuilt.SessionID(), ev.Payload, ev.SessionID())
		}
		if !reflect.DeepEqual(canonical(t, rebuilt.Payload), canonical(t, ev.Payload)) {
			t.Fatalf("payload changed on rebuilding:\n%s\n%s", mustJSON(t, ev.Payload), mustJSON(t, rebuilt.Payload))
		}
	})
}
