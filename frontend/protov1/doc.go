// Package protov1 is the runner's protocol v1 front end: the WebSocket
// endpoint (/sessions) that hosts use to open, drive, leave and resume
// sessions. It maps frames onto the runner core (sessions, event log) and an
// agent's output onto frames. Every frame it sends after init is first
// written to the session's event log and numbered there, so a host that
// reconnects with the last seq it saw misses nothing and sees nothing twice.
// The agent's output is logged in batches, and what is logged is sent in
// groups, each in one write: as batch frames to a host of a relay session
// that asked for them, otherwise one frame per WebSocket message.
package protov1
