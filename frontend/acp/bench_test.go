package acp_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
)

// BenchmarkUpdateLatency is what the front end adds between the core
// and the editor: each text delta's arrival at a reader of the core's
// events (the agent driven directly) against its session/update's
// arrival at an ACP client on the Go SDK, over pipes, in one process.
// The mock paces its events 1 ms apart so each crosses alone. Reported:
// p50 and p99 of the added latency per update, in µs.
func BenchmarkUpdateLatency(b *testing.B) { benchUpdateLatency(b, false) }

// BenchmarkUpdateLatencyRunner is the same with the front end on a
// runner's sessions API (loopback HTTP, its event stream).
func BenchmarkUpdateLatencyRunner(b *testing.B) { benchUpdateLatency(b, true) }

func benchUpdateLatency(b *testing.B, remote bool) {
	r := newRigOver(b, mock.Config{Pace: time.Millisecond}, remote)
	s, err := r.conn.NewSession(context.Background(), acpsdk.NewSessionRequest{Cwd: filepath.Join(r.root, "bench"), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		b.Fatal(err)
	}
	id := string(s.SessionId)
	var added []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		info, err := r.core.Get(id)
		if err != nil {
			b.Fatal(err)
		}
		direct := make(chan []time.Time, 1)
		go func() {
			var at []time.Time
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for e, err := range r.core.Events(ctx, id, info.LastSeq) {
				if err != nil || e.Kind == agent.KindTurnCompleted {
					break
				}
				if e.Kind == agent.KindItemDelta && e.Delta.Field == agent.FieldText {
					at = append(at, time.Now())
				}
			}
			direct <- at
		}()
		r.turn(b, s.SessionId, "bench")
		at := <-direct
		updates, _, got := r.takeTimed()
		j := 0
		for k, u := range updates {
			if (u.AgentMessageChunk != nil || u.AgentThoughtChunk != nil) && j < len(at) {
				added = append(added, got[k].Sub(at[j]))
				j++
			}
		}
	}
	b.StopTimer()
	reportPercentiles(b, added)
}

// BenchmarkSessionNew is session/new to its answer through the front
// end, against the core's own Create of a session in a new workspace.
func BenchmarkSessionNew(b *testing.B) {
	r := newRig(b, mock.Config{})
	var viaACP, direct []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := r.conn.NewSession(context.Background(), acpsdk.NewSessionRequest{Cwd: filepath.Join(r.root, "a"+itoa(i)), McpServers: []acpsdk.McpServer{}}); err != nil {
			b.Fatal(err)
		}
		viaACP = append(viaACP, time.Since(start))
		start = time.Now()
		if _, err := r.core.Create(context.Background(), sessionsCreate("d"+itoa(i))); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(start))
	}
	slices.Sort(viaACP)
	slices.Sort(direct)
	b.ReportMetric(float64(viaACP[len(viaACP)/2].Microseconds()), "acp-p50-µs")
	b.ReportMetric(float64(direct[len(direct)/2].Microseconds()), "core-p50-µs")
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		b.Fatal("no update matched")
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(len(d))/float64(b.N), "updates/turn")
}
