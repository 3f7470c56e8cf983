// Package metrics owns the runner's Prometheus metrics: one Registry per
// runner (never the client library's global one) and every collector on
// it — sessions by agent and state, canonical events, pending approvals
// and their age, event delivery latency, agent starts, crashes and exit
// codes, event log commit latency and connections by front end.
//
// The runner core knows nothing of Prometheus: runner/sessions calls a
// sessions.Observer, the sessions API a sessionsapi.Observer and the event
// log an eventlog.Options.OnCommit hook, and *Metrics implements them.
// What can be read when Prometheus scrapes (sessions, approvals) is read
// then, from the Sources given to Watch, so no count can drift from the
// truth. docs/operating.md says what each metric means.
package metrics
