// Package acp is the Agent Client Protocol (ACP v1) front end: an editor
// starts `tether acp` as its agent and speaks JSON-RPC on its stdio; this
// package answers it from a session core, local or a remote runner's.
//
// It owns the projection of canonical events (package agent) onto ACP's
// session/update notifications, of approvals onto
// session/request_permission, and of turns onto session/prompt's stop
// reasons. It knows no agent by name: what an agent can do comes from the
// capabilities its core reports. The wire itself (framing, JSON-RPC) is
// the ACP Go SDK's.
package acp
