package metrics

import (
	"net/http"
	"regexp"
	"time"

	"github.com/tetherhq/tether/agent"
)

// AgentStarted counts an agent start for a new session (the sessions
// manager's Observer).
func (m *Metrics) AgentStarted(agentName string, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "failed"
	}
	m.agentStarts.WithLabelValues(agentName, result).Inc()
}

// EventLogged counts an event a session logged, and a session's end by
// reason and exit code (the sessions manager's Observer).
func (m *Metrics) EventLogged(agentName string, e *agent.Event) {
	if m == nil {
		return
	}
	m.events.WithLabelValues(agentName, string(e.Kind)).Inc()
	if e.Kind != agent.KindSessionEnded {
		return
	}
	reason := "closed"
	if e.Session != nil && e.Session.Reason != "" {
		reason = e.Session.Reason
	}
	m.agentExits.WithLabelValues(agentName, reason, exitCode(e.Error)).Inc()
	if reason != "closed" {
		m.agentCrashes.WithLabelValues(agentName).Inc()
	}
}

// The drivers report a process that ended abnormally with the transport's
// ExitError text ("agent process exited with code 3", "agent process was
// killed by signal killed"): the exit code is read back from it.
var (
	exitCodeRE   = regexp.MustCompile(`exited with code (-?\d+)`)
	exitSignalRE = regexp.MustCompile(`killed by signal ([a-z A-Z0-9]+?)(?:;|$)`)
)

// exitCode is the exit code ("3") or signal ("signal killed") an ended
// session's error reports, or "none".
func exitCode(e *agent.Error) string {
	if e == nil {
		return "none"
	}
	if m := exitCodeRE.FindStringSubmatch(e.Message); m != nil {
		return m[1]
	}
	if m := exitSignalRE.FindStringSubmatch(e.Message); m != nil {
		return "signal " + m[1]
	}
	return "none"
}

// LogCommitted records one group commit of the event log (its
// eventlog.Options.OnCommit).
func (m *Metrics) LogCommitted(took time.Duration, events int, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.commitFailures.Inc()
		return
	}
	m.commitSeconds.Observe(took.Seconds())
	m.commitEvents.Add(float64(events))
}

// Delivery is a front end's Observer of events written to live clients.
type Delivery struct {
	m        *Metrics
	frontEnd string
}

// Delivery returns the delivery observer of one front end.
func (m *Metrics) Delivery(frontEnd string) *Delivery { return &Delivery{m: m, frontEnd: frontEnd} }

// EventDelivered records the time from the event's making (the agent's
// output) to now, when the front end has handed it to a live client.
func (d *Delivery) EventDelivered(agentName string, e *agent.Event) {
	if d == nil || d.m == nil || e.Time.IsZero() {
		return
	}
	d.m.delivery.WithLabelValues(d.frontEnd, agentName).Observe(max(d.m.now().Sub(e.Time), 0).Seconds())
}

// Track counts the requests and connections open through h, as the front
// end's: put it behind authentication, so only clients count.
func (m *Metrics) Track(frontEnd string, h http.Handler) http.Handler {
	if m == nil {
		return h
	}
	open := m.connections.WithLabelValues(frontEnd)
	total := m.connsTotal.WithLabelValues(frontEnd)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open.Inc()
		total.Inc()
		defer open.Dec()
		h.ServeHTTP(w, r)
	})
}
