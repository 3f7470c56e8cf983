package mast

import (
	json "github.com/segmentio/encoding/json"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

func feedEvent(e agent.Event) sessions.FeedEvent { return sessions.FeedEvent{Event: e} }

// BenchmarkProjectEncode is the daemon's own cost per canonical event:
// projecting a mock turn's events to mast.* and encoding their frames as
// writeJSON does.
func BenchmarkProjectEncode(b *testing.B) {
	evs := mappingExamples()
	var turn []string
	for k := range evs {
		turn = append(turn, k)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		st := newFeedState()
		for _, k := range turn {
			for _, e := range evs[k] {
				n++
				events, stamps := st.apply(feedEvent(e))
				for i, m := range events {
					if _, err := json.Marshal(EventFrame{Type: "event", Event: m, Timestamp: Timestamp(time.UnixMicro(stamps[i]))}); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
}
