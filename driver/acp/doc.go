// Package acp owns agents that speak the Agent Client Protocol (ACP v1,
// JSON-RPC 2.0 over the agent's stdio) as an agent.Driver: Tether is the
// ACP client. One agent process per session is started (under the runner's
// sandbox when there is one), initialized, and given a new session, or an
// old one through session/resume or session/load. Its session/update
// notifications are mapped onto the canonical events of package agent;
// session/request_permission becomes an approval whose resolution picks the
// matching option; an interrupt is session/cancel. The client methods an
// agent may call are answered inside the workspace only (fs/*) or declined
// by capability (terminal/*: the agent's own shell already runs under the
// sandbox).
//
// The wire protocol is github.com/coder/acp-go-sdk's; this package adds
// the process, the mapping and the approvals. Agent kinds built on it
// (Gemini CLI, `opencode acp`) register themselves from their own
// subpackages with a Spec.
package acp
