// Package shim owns the adapter-shim API: the HTTP + WebSocket contract a
// Project Tab style backend drives one agent through (POST /spawn, /kill,
// /pause, /resume, /resolve, /checkpoint, /inject-context, /update-brief,
// GET /health, WS /events of AdapterEvent envelopes). It is a front end
// over runner/sessions: a run is one canonical session of the configured
// agent kind, its canonical events are mapped onto the backend's
// AgentEvent variants, and its decisions are the durable approvals. It
// knows no agent's wire format: everything per agent (its own session id,
// its approvals) comes from canonical events and session Info.
//
// Unlike the reference shims it pushes events as they are logged (no
// polling), serves the stream as a view over the durable event log (each
// client reads the runs' canonical events from the log and maps them as
// the run's pump decided, so each connected client gets the whole stream
// and a reconnecting client resumes from a sequence, in a shim started
// again on its data too, while the shim keeps no copy of the events), and
// resolves real approvals. Only its backend may drive it:
// requests from web pages, under other hosts' names, with non-JSON bodies
// or without its token (when it has one) are refused before any endpoint
// (guard.go). docs/shim.md is the contract.
package shim
