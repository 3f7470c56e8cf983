// Package opencode owns OpenCode as an agent.Driver: one `opencode serve`
// per session on a loopback port behind a random password, a session
// created (or resumed, or forked) through its HTTP API, prompts sent to the
// async prompt endpoint, and its /event stream followed — reconnected when
// it drops and reconciled with the session's messages, since the stream has
// no ids to resume from — and mapped onto the canonical events of package
// agent. Permissions become approvals answered through its permission API;
// Messages and Diff come from its own history and diff endpoints.
//
// The wire format is package protocol/opencode's; this package adds the
// process, the HTTP calls and the mapping (docs/events-opencode.md).
//
// The package registers the agent kind "opencode" (package driver): its
// CLI, its slice of the runner's environment, and the runner's own
// opencode.json for each session's home, its providers' keys behind the
// runner's proxies when sandboxed.
package opencode
