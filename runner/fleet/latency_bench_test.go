package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/agent"
)

// latencyPause is the idle before each event, as before a turn's first.
const latencyPause = 2 * time.Millisecond

// BenchmarkEventToAnotherRunner times an event from one runner to a reader
// on another, three nodes of one cluster in this process, against what
// the stream alone takes: "stream" is a publish to its republished copy on
// another node, "event" one event from the local log through the
// publisher and the stream to a reader, and "turn" the same for bursts of
// 32 events (each event's own time). Each reports its p50 and p99 in ms;
// ns/op is the mean.
func BenchmarkEventToAnotherRunner(b *testing.B) {
	fleets := openCluster(b, 3)
	b.Run("stream", func(b *testing.B) {
		live := make(chan *nats.Msg, 64)
		sub, err := fleets[1].nc.ChanSubscribe(liveSubject("bench-stream"), live)
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Unsubscribe()
		ctx := context.Background()
		timed(b, 1, func() {
			if _, err := fleets[0].js.Publish(ctx, eventSubject("bench-stream"), []byte("x")); err != nil {
				b.Fatal(err)
			}
			select {
			case <-live:
			case <-time.After(5 * time.Second):
				b.Fatal("no republished message")
			}
		})
	})
	l := fleets[0].Log(openLog(b))
	publishing(b, fleets[0])
	runs := 0
	for _, c := range []struct {
		name  string
		burst int
	}{{"event", 1}, {"turn", 32}} {
		b.Run(c.name, func(b *testing.B) {
			runs++ // a session of its own for each run: b.Run calls it again with a larger b.N
			session := fmt.Sprintf("bench-%s-%d", c.name, runs)
			ctx, cancel := context.WithCancel(context.Background())
			got := make(chan time.Duration, c.burst)
			done := make(chan struct{})
			defer func() { cancel(); <-done }()
			go func() {
				defer close(done)
				for e, err := range fleets[1].streamEvents(ctx, session, 0) {
					if err != nil {
						return
					}
					select {
					case got <- time.Since(e.Time):
					case <-ctx.Done():
						return
					}
				}
			}()
			var lat []time.Duration
			timed(b, c.burst, func() {
				for range c.burst {
					appendEvent(b, l, session)
				}
				for range c.burst {
					select {
					case d := <-got:
						lat = append(lat, d)
					case <-time.After(5 * time.Second):
						b.Fatal("an event did not reach the reader on another runner")
					}
				}
			})
			report(b, lat)
		})
	}
}

// timed runs round b.N times after a pause each, timing only round, and
// reports the percentiles of rounds of one event.
func timed(b *testing.B, events int, round func()) {
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		time.Sleep(latencyPause)
		b.StartTimer()
		start := time.Now()
		round()
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	if events == 1 {
		report(b, lat)
	}
}

func report(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
}

func appendEvent(b *testing.B, l *Log, session string) {
	payload, err := json.Marshal(agent.Event{Kind: agent.KindItemDelta, SessionID: session, Time: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := l.AppendAt(context.Background(), session, [][]byte{payload}); err != nil {
		b.Fatal(err)
	}
}
