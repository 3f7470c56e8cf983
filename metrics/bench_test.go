package metrics

import (
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/sessions"
)

// What metrics add to every logged event, on the session's own goroutine.
func BenchmarkEventLogged(b *testing.B) {
	m := New(Options{})
	e := &agent.Event{Kind: agent.KindItemDelta, Time: time.Now()}
	d := m.Delivery("sessions_api")
	b.ReportAllocs()
	for b.Loop() {
		m.EventLogged("claude", e)
		d.EventDelivered("claude", e)
	}
}

// fakeSessions is a runner's sessions, as many as a benchmark wants.
type fakeSessions struct {
	list    []sessions.Info
	pending []approvals.Record
}

func (f *fakeSessions) Agents() map[string]agent.Capabilities {
	return map[string]agent.Capabilities{"claude": {}, "codex": {}, "opencode": {}, "mock": {}}
}
func (f *fakeSessions) List() []sessions.Info                  { return f.list }
func (f *fakeSessions) Approvals() ([]approvals.Record, error) { return f.pending, nil }

// A scrape of a runner with n sessions and n/10 pending approvals.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n, "sessions"), func(b *testing.B) {
			src := &fakeSessions{}
			agents := []string{"claude", "codex", "opencode", "mock"}
			now := time.Now()
			for i := range n {
				src.list = append(src.list, sessions.Info{ID: fmt.Sprint(i), Agent: agents[i%4], State: sessions.StateIdle})
				if i%10 == 0 {
					src.pending = append(src.pending, approvals.Record{Approval: agent.Approval{Agent: agents[i%4], Created: now.Add(-time.Duration(i) * time.Second)}})
				}
			}
			m := New(Options{})
			m.Watch(Sources{Sessions: src})
			h := m.Handler()
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				_, _ = io.Copy(io.Discard, rec.Body)
			}
		})
	}
}
