// Package fleet owns what runners share when they form a fleet on NATS
// JetStream: each session's canonical events in one replicated stream (a
// subject per session), the session registry and the runner registry in
// key-value buckets, the approvals every runner lists, and the
// request/reply subjects that carry a command to the runner that owns a
// session. Core puts all of it behind the session core's interface
// (sessions.Core), so every front end serves any session of the fleet
// without knowing where it lives.
//
// A runner is still the only writer of its sessions' events: its local
// log is the outbox, and a publisher copies what the log holds into the
// stream, each event once (Nats-Msg-Id de-duplicates a retried publish,
// an expected last sequence per subject fences out a second writer). A
// reader of a session that lives elsewhere reads the stream and keeps
// the session's seq in order and gapless.
//
// With no fleet configured a runner opens none of this; see
// docs/fleet.md for the design and what it guarantees.
package fleet
