package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/sessions"
)

// Sessions is what the metrics read of the canonical sessions when
// scraped (a *sessions.Manager).
type Sessions interface {
	Agents() map[string]agent.Capabilities
	List() []sessions.Info
	Approvals() ([]approvals.Record, error)
}

// Sources are read at every scrape.
type Sources struct {
	Sessions Sessions
}

// Watch registers the gauges read from src at every scrape. Call it once.
// The counters of each agent src has start at zero, so a rate or an
// alert on them has a series from the first scrape.
func (m *Metrics) Watch(src Sources) {
	m.reg.MustRegister(&scrape{src: src, now: m.now})
	if src.Sessions == nil {
		return
	}
	for name := range src.Sessions.Agents() {
		m.agentStarts.WithLabelValues(name, "ok")
		m.agentStarts.WithLabelValues(name, "failed")
		m.agentCrashes.WithLabelValues(name)
	}
}

var (
	descSessions = prometheus.NewDesc("tether_sessions",
		"Sessions of every front end by agent and state (idle, running, ended; ended ones the runner still lists).",
		[]string{"agent", "state"}, nil)
	descPending = prometheus.NewDesc("tether_approvals_pending",
		"Approvals waiting for a decision, by agent.", []string{"agent"}, nil)
	descOldest = prometheus.NewDesc("tether_approval_oldest_age_seconds",
		"Age of the oldest approval still waiting, by agent (0 when none waits).", []string{"agent"}, nil)
	descAges = prometheus.NewDesc("tether_approval_pending_age_seconds",
		"Ages of the approvals waiting now, as a histogram.", nil, nil)
	descScrapeErrors = prometheus.NewDesc("tether_metrics_source_errors",
		"1 when a source could not be read at this scrape (its gauges are missing).", []string{"source"}, nil)
)

// approvalAgeBuckets are the upper bounds of tether_approval_pending_age_seconds.
var approvalAgeBuckets = []float64{1, 10, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600}

type scrape struct {
	src Sources
	now func() time.Time
}

func (s *scrape) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSessions, descPending, descOldest, descAges, descScrapeErrors} {
		ch <- d
	}
}

func (s *scrape) Collect(ch chan<- prometheus.Metric) {
	if s.src.Sessions == nil {
		return
	}
	agents := s.src.Sessions.Agents()
	states := []sessions.State{sessions.StateIdle, sessions.StateRunning, sessions.StateEnded}
	type key struct {
		agent string
		state sessions.State
	}
	counts := map[key]int{}
	for name := range agents { // every agent and state shows, at zero too
		for _, st := range states {
			counts[key{name, st}] = 0
		}
	}
	for _, info := range s.src.Sessions.List() {
		counts[key{info.Agent, info.State}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(n), k.agent, string(k.state))
	}
	pending, err := s.src.Sessions.Approvals()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descScrapeErrors, prometheus.GaugeValue, 1, "approvals")
		return
	}
	now := s.now()
	perAgent := map[string]int{}
	oldest := map[string]float64{}
	for name := range agents {
		perAgent[name], oldest[name] = 0, 0
	}
	ages := make([]float64, 0, len(pending))
	var sum float64
	for _, rec := range pending {
		if !rec.Pending() {
			continue
		}
		a := rec.Approval.Agent
		age := max(now.Sub(rec.Approval.Created), 0).Seconds()
		perAgent[a]++
		oldest[a] = max(oldest[a], age)
		ages = append(ages, age)
		sum += age
	}
	for a, n := range perAgent {
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(n), a)
		ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, oldest[a], a)
	}
	slices.Sort(ages)
	buckets := make(map[float64]uint64, len(approvalAgeBuckets))
	for _, ub := range approvalAgeBuckets {
		n, _ := slices.BinarySearch(ages, ub+1e-9)
		buckets[ub] = uint64(n)
	}
	ch <- prometheus.MustNewConstHistogram(descAges, uint64(len(ages)), sum, buckets)
}
