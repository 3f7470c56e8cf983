package opencode

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	oc "github.com/tetherhq/tether/protocol/opencode"
)

// What mapping OpenCode onto canonical events costs beyond relaying its
// stream: "raw" reads and decodes each event of a recorded /event stream
// (a shell command asked and allowed); "canonical" also maps the
// session's events and encodes them as the runner's log stores them.
// docs/benchmarks.md quotes the ratio.
func BenchmarkMapping(b *testing.B) {
	stream, err := os.ReadFile(filepath.Join("testdata", "serve-event-permission.sse"))
	if err != nil {
		b.Fatal(err)
	}
	read := func(each func(*oc.Event)) int {
		r := oc.NewEventReader(bytes.NewReader(stream), 0)
		n := 0
		for {
			ev, err := r.Next()
			if errors.Is(err, io.EOF) {
				return n
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
			each(ev)
		}
	}
	events := read(func(*oc.Event) {})
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			read(func(*oc.Event) {})
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
	})
	b.Run("canonical", func(b *testing.B) {
		now := func() time.Time { return time.Time{} }
		out := 0
		var buf []byte
		for b.Loop() {
			var m *mapper
			read(func(ev *oc.Event) {
				if p, ok := ev.Payload.(*oc.SessionCreated); ok && m == nil {
					m = newMapper(p.Info.ID, now)
				}
				if m == nil || ev.IsNoise() || ev.SessionID() != m.session {
					return
				}
				for _, e := range m.handle(ev) {
					if buf, err = e.AppendJSON(buf[:0]); err != nil {
						b.Fatal(err)
					}
					out++
				}
			})
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
		b.ReportMetric(float64(out)/float64(b.N*events), "canonical/event")
	})
}
