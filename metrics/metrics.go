package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configures Metrics.
type Options struct {
	// Now is the clock approval ages and delivery latencies are measured
	// with (time.Now if nil).
	Now func() time.Time
	// Process adds the Go runtime's and the process's own collectors
	// (go_*, process_*).
	Process bool
}

// Metrics is a runner's registry and its collectors. Its methods are safe
// for concurrent use; a nil *Metrics records nothing.
type Metrics struct {
	reg *prometheus.Registry
	now func() time.Time

	events         *prometheus.CounterVec
	delivery       *prometheus.HistogramVec
	agentStarts    *prometheus.CounterVec
	agentExits     *prometheus.CounterVec
	agentCrashes   *prometheus.CounterVec
	commitSeconds  prometheus.Histogram
	commitEvents   prometheus.Counter
	commitFailures prometheus.Counter
	connections    *prometheus.GaugeVec
	connsTotal     *prometheus.CounterVec
}

// New makes a registry with every collector registered.
func New(opts Options) *Metrics {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		now: opts.Now,
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_events_total",
			Help: "Canonical session events written to the event log, by agent and event kind (rate() gives events per second).",
		}, []string{"agent", "kind"}),
		delivery: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tether_event_delivery_seconds",
			Help:    "Time from an agent's output (the event's time) to a front end writing the event to a live client.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"front_end", "agent"}),
		agentStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_agent_starts_total",
			Help: "Agent starts for new sessions, by agent and result (ok, failed).",
		}, []string{"agent", "result"}),
		agentExits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_agent_exits_total",
			Help: "Sessions that ended, by agent, reason (closed, exited, killed, failed) and the agent process's exit code or signal where it reported one (else none).",
		}, []string{"agent", "reason", "code"}),
		agentCrashes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_agent_crashes_total",
			Help: "Sessions whose agent ended on its own (any reason but closed), by agent.",
		}, []string{"agent"}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tether_eventlog_commit_seconds",
			Help:    "Time one group commit of the event log takes (write and fsync).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		commitEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_eventlog_committed_events_total",
			Help: "Events (canonical events and protocol v1 frames) committed to the event log.",
		}),
		commitFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_eventlog_commit_failures_total",
			Help: "Event log commits that failed (they are retried).",
		}),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tether_connections",
			Help: "Authenticated requests and connections open now (WebSockets and event streams included), by front end.",
		}, []string{"front_end"}),
		connsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_connections_total",
			Help: "Authenticated requests and connections accepted, by front end.",
		}, []string{"front_end"}),
	}
	m.reg.MustRegister(m.events, m.delivery, m.agentStarts, m.agentExits, m.agentCrashes,
		m.commitSeconds, m.commitEvents, m.commitFailures, m.connections, m.connsTotal)
	if opts.Process {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Handler serves the registry in Prometheus's exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
