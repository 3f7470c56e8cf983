// Package agent owns the one model every agent is seen through: the
// canonical session, turn, item, event and approval types, the capability
// flags an agent declares, and the Driver and Session interfaces each agent
// driver (Claude Code, Codex, OpenCode, the mock) implements.
//
// An agent's work is a stream of events. A turn starts, items start, stream
// deltas and complete (completed is authoritative: it carries the whole
// item), approvals are requested and resolved, usage is reported, and the
// turn completes. Every event keeps the agent's own payload beside it
// (Event.Raw), so nothing the agent said is lost to the mapping.
//
// The package is pure: types, validation and JSON encoding. It starts no
// process and opens no connection; drivers do, and the runner core numbers
// and stores the events (Event.Seq).
package agent
