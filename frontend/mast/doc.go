// Package mast owns Tether's side of the Mast daemon protocol: a daemon on
// the developer's machine dials out to an orchestrator over WebSocket
// (so nothing listens at home), pairs with a six-digit code when it has no
// device key, announces its agents and their readiness, answers the
// orchestrator's eight semantic commands with one command_result each,
// streams every canonical event as mast.* events, sends heartbeats,
// reconnects with jittered exponential backoff, and answers sync_request
// with what the orchestrator missed.
//
// It is a front end over runner/sessions (the sessions.Core interface) and
// knows no agent: sessions, their durable events (replayed from the
// runner-wide feed) and their durable approvals are the core's. The
// daemon projects the feed once, as events are logged, and keeps a
// bounded window of its newest frames, so a reconnect costs what the
// orchestrator missed; older than the window, it folds the log. The wire format is the semantic
// generation of the protocol (command_result, mast.* events,
// status{agentReady,agents}); docs/daemon.md has the mapping of canonical
// events to mast.* events.
package mast
