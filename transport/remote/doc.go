// Package remote is the transport to an agent on a runner (`tether serve`):
// it opens a protocol v1 session in relay mode, so the lines it reads and
// writes are the agent's own, exactly as over a local process, and the SDK
// above it cannot tell the difference. It reconnects by itself after a
// dropped connection, resuming from the last frame it saw, so its reader
// sees every line once and in order. It asks for batch frames, so a burst
// of the agent's output arrives in a few WebSocket messages.
package remote
