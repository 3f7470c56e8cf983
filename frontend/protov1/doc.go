// Package protov1 is the runner's protocol v1 front end: the WebSocket
// endpoint (/sessions) that hosts use to open, drive, leave and resume
// Claude Code sessions with the Claude Code SDK's own protocol. It is a
// projection over the session core, as every front end is: a v1 session
// is a native session of the core (sessions.CreateRequest.Native), listed,
// streamed, metered and approved like any other, and its frames are made
// from the session's canonical events — session.started is ready, an
// event carrying a line of the CLI's is a message with that line,
// turn.completed is done, a session.ended with the agent's failure is an
// error — numbered with the events' seqs, so a host that reconnects with
// the last seq it saw misses nothing and sees nothing twice. Answers that
// concern one connection only (a refusal, a control request's answer) go
// to it without a seq. What is sent, is sent in groups, each in one write:
// as batch frames to a host of a relay session that asked for them,
// otherwise one frame per WebSocket message.
package protov1
