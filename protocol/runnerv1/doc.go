// Package runnerv1 owns protocol v1, the WebSocket frames between a host and
// a runner: one JSON object per text frame, discriminated by "type". It is
// pure: it encodes and decodes frames and validates them, nothing else.
//
// Host to runner: init, query, control, interrupt, stop, and the host-control
// extension frame input. Runner to host: ready, message, done, error and
// control_response; each carries seq, the frame's number in the session's
// event log (from 1), which a reconnecting host sends back as last_seq.
//
// The frames and their fields are those of the sidecar protocol this runner
// replaces, so a client written from that protocol's tables works unchanged;
// seq, last_seq, host_control and input are additions such a client can
// ignore.
//
// Batch frames are an extension a host must ask for: with host_control and
// "batch": true in its init, the runner may carry several consecutive
// frames of the log in one batch frame (see AppendBatch for the layout),
// which saves a WebSocket message per frame while the host is behind.
// Every other client gets exactly one frame per WebSocket message.
package runnerv1

// Version is the protocol version this package speaks.
const Version = 1

// Frame types.
const (
	TypeInit            = "init"
	TypeQuery           = "query"
	TypeControl         = "control"
	TypeInterrupt       = "interrupt"
	TypeStop            = "stop"
	TypeInput           = "input"
	TypeReady           = "ready"
	TypeMessage         = "message"
	TypeDone            = "done"
	TypeError           = "error"
	TypeControlResponse = "control_response"
	TypeBatch           = "batch"
)

// Error codes sent in error frames.
const (
	CodeUnsupportedVersion = "unsupported_protocol_version"
	CodeInvalidFrame       = "invalid_frame"
	CodeUnknownType        = "unknown_type"
	CodeFrameTooLarge      = "frame_too_large"
	CodeNotInitialized     = "not_initialized"
	CodeAlreadyInitialized = "already_initialized"
	CodeInvalidWorkspace   = "invalid_workspace_id"
	CodeWorkspaceBusy      = "workspace_busy"
	CodeInvalidOptions     = "invalid_session_opts"
	CodeSessionNotFound    = "session_not_found"
	CodeTooManySessions    = "too_many_sessions"
	CodeAgentStartFailed   = "agent_start_failed"
	CodeAgentExited        = "agent_exited"
	// CodeTurnInProgress refuses a query sent while an earlier query's
	// turn runs (until its done frame): one query at a time, as the
	// protocol labels every frame with the running query's request_id.
	CodeTurnInProgress = "turn_in_progress"
	CodeControlFailed  = "control_failed"
	CodeShuttingDown   = "shutting_down"
	CodeInternal       = "internal_error"
	// CodeLastSeqAhead refuses a resume whose last_seq is past the end of
	// the session's log by more than a runner crash can lose (a crash
	// that lost frames the host had received is not an error: the session
	// numbers on after last_seq). The host cannot resume that session.
	CodeLastSeqAhead = "last_seq_ahead"
)
