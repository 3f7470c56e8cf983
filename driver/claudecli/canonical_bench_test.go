package claudecli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// cliLines are the lines the CLI wrote in a recorded session.
func cliLines(b *testing.B, name string) [][]byte {
	b.Helper()
	f, err := os.Open(filepath.Join("testdata", "transcripts", name))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Dir string          `json:"dir"`
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			b.Fatal(err)
		}
		if rec.Dir == "<" && rec.Msg != nil {
			lines = append(lines, rec.Msg)
		}
	}
	return lines
}

// What mapping Claude Code onto canonical events costs beyond relaying
// its lines: "raw" parses each line as the SDK does for protocol v1;
// "canonical" also maps it and encodes the events as the runner's log
// stores them. Per line of a streamed Bash turn (deltas, a tool call and
// its result). docs/benchmarks.md quotes the ratio.
func BenchmarkMapping(b *testing.B) {
	lines := cliLines(b, "b-sdk-tool-bash-partial-messages.transcript.jsonl")
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			for _, line := range lines {
				if _, err := cc.Parse(line); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
	})
	b.Run("canonical", func(b *testing.B) {
		now := func() time.Time { return time.Time{} }
		events := 0
		var buf []byte
		for b.Loop() {
			m := newCanonicalMapper("s1", now)
			m.startTurn("bench", "")
			for _, line := range lines {
				msg, err := cc.Parse(line)
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range m.message(msg) {
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
