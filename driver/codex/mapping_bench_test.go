package codex

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/protocol/codexapp"
)

// What mapping Codex onto canonical events costs beyond relaying its
// lines: "raw" decodes each notification the app-server printed in a
// recorded turn; "canonical" also maps it and encodes the events as the
// runner's log stores them. docs/benchmarks.md quotes the ratio.
func BenchmarkMapping(b *testing.B) {
	f, err := os.Open(filepath.Join("testdata", "app-server-approval-interrupt.transcript.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l transcriptLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			b.Fatal(err)
		}
		if l.Dir == "<" {
			lines = append(lines, l.Msg)
		}
	}
	f.Close()
	decode := func(line []byte) *codexapp.Notification {
		msg, err := codexapp.Decode(append([]byte(nil), line...))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := msg.(*codexapp.Notification)
		return n
	}
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			for _, line := range lines {
				decode(line)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
	})
	b.Run("canonical", func(b *testing.B) {
		now := func() time.Time { return time.Time{} }
		events := 0
		var buf []byte
		for b.Loop() {
			m := newMapper(now)
			for _, line := range lines {
				n := decode(line)
				if n == nil {
					continue
				}
				for _, e := range m.notification(n) {
					if buf, err = e.AppendJSON(buf[:0]); err != nil {
						b.Fatal(err)
					}
					events++
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
		b.ReportMetric(float64(events)/float64(b.N*len(lines)), "events/line")
	})
}
