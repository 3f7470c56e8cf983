// Package codex is OpenAI's Codex CLI as an agent.Driver: one `codex
// app-server` process per session, spoken to in JSON-RPC over its stdio
// (package protocol/codexapp), its threads, turns, items and approval
// requests mapped onto the canonical model of package agent (the table is
// docs/events-codex.md).
//
// A session is one Codex thread: started, resumed by its thread id, or
// forked from one. Codex is told to ask before it runs a command or
// changes a file (approval policy "untrusted"; the commands it knows to be
// read-only run without asking) and to run its commands in its own
// workspace-write sandbox. Approvals wait for Session.Resolve; the first
// resolution wins. The model's request_user_input and an MCP server's
// elicitation are question approvals. Messages and Diff come from Codex's own history of the
// thread (thread/read), so a resumed session shows its past.
//
// The package registers the agent kind "codex" (package driver): its CLI,
// its slice of the runner's environment (OPENAI_*), and the runner's own
// config.toml for each session's home, its providers' keys behind the
// runner's proxies when sandboxed.
package codex
