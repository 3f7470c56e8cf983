package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/sessions"
)

// Approval ages come from the injected clock: the oldest per agent, and
// the histogram of all of them.
func TestApprovalAges(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	src := &fakeSessions{
		list: []sessions.Info{{Agent: "mock", State: sessions.StateRunning}, {Agent: "mock", State: sessions.StateRunning}},
		pending: []approvals.Record{
			{Approval: agent.Approval{Agent: "mock", Created: now.Add(-90 * time.Second)}},
			{Approval: agent.Approval{Agent: "mock", Created: now.Add(-5 * time.Second)}},
			{Approval: agent.Approval{Agent: "codex", Created: now.Add(-2 * time.Hour)}},
		},
	}
	m := New(Options{Now: func() time.Time { return now }})
	m.Watch(Sources{Sessions: src})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`tether_approval_oldest_age_seconds{agent="mock"} 90`,
		`tether_approval_oldest_age_seconds{agent="codex"} 7200`,
		`tether_approval_oldest_age_seconds{agent="claude"} 0`,
		`tether_approvals_pending{agent="mock"} 2`,
		`tether_approval_pending_age_seconds_bucket{le="10"} 1`,
		`tether_approval_pending_age_seconds_bucket{le="300"} 2`,
		`tether_approval_pending_age_seconds_bucket{le="3600"} 2`,
		`tether_approval_pending_age_seconds_bucket{le="14400"} 3`,
		`tether_approval_pending_age_seconds_count 3`,
		`tether_sessions{agent="mock",state="running"} 2`,
		`tether_sessions{agent="codex",state="idle"} 0`,
		`tether_agent_starts_total{agent="opencode",result="failed"} 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no %q in:\n%s", want, body)
		}
	}
}
