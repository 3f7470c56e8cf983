package runnerv1

import "encoding/json"

// Init opens (or resumes) a session. SessionOpts are validated by the
// runner, never passed through blindly.
type Init struct {
	ProtocolVersion int             `json:"protocol_version"`
	SessionOpts     json.RawMessage `json:"session_opts,omitempty"`
	WorkspaceID     string          `json:"workspace_id"`
	// Resume names an earlier session: reattach to it while it lives,
	// otherwise restart its agent with its conversation.
	Resume string `json:"resume,omitempty"`
	// LastSeq is the last frame seq the host saw; later frames are
	// replayed on resume.
	LastSeq uint64 `json:"last_seq,omitempty"`
	// HostControl asks the runner to relay the agent's control protocol:
	// every stdout line (control requests included) goes to the host and
	// input frames go to the agent's stdin.
	HostControl bool `json:"host_control,omitempty"`
	// Batch says the host reads batch frames; the runner sends them only
	// on host-control connections that ask.
	Batch bool `json:"batch,omitempty"`
}

// Query starts a turn.
type Query struct {
	RequestID string          `json:"request_id"`
	Prompt    json.RawMessage `json:"prompt"` // a string, or content blocks
	Opts      json.RawMessage `json:"opts,omitempty"`
}

// Control sends a control request to the agent.
type Control struct {
	RequestID string          `json:"request_id"`
	Subtype   string          `json:"subtype"`
	Params    json.RawMessage `json:"params,omitempty"`
}

// Interrupt stops the turn in progress.
type Interrupt struct{}

// Stop ends the session.
type Stop struct{}

// Input is one raw line for the agent's stdin (host-control sessions). N
// numbers a host's input frames from 1; the runner applies each number
// once and reports the last it applied in a resumed ready (InputSeq), so a
// host resends what a dropped connection may have lost.
type Input struct {
	Line string `json:"line"`
	N    uint64 `json:"n,omitempty"`
}

// Ready acknowledges init once the agent is up.
type Ready struct {
	Seq       uint64 `json:"seq,omitempty"`
	SessionID string `json:"session_id"`
	// Resumed is true when the host reattached to a live session.
	Resumed bool `json:"resumed,omitempty"`
	// InputSeq is the last numbered input frame the runner applied.
	InputSeq uint64 `json:"input_seq,omitempty"`
}

// Message carries one line of the agent's output, verbatim: as a string in
// Payload, or — in relay (host_control) sessions, for lines that are JSON
// objects — embedded as is in Line, which spares both ends escaping it.
type Message struct {
	Seq       uint64          `json:"seq,omitempty"`
	RequestID string          `json:"request_id"`
	Payload   string          `json:"payload,omitempty"`
	Line      json.RawMessage `json:"line,omitempty"`
}

// AgentLine is the agent's line, whichever field carries it.
func (m Message) AgentLine() []byte {
	if len(m.Line) > 0 {
		return m.Line
	}
	return []byte(m.Payload)
}

// Done ends a turn.
type Done struct {
	Seq       uint64 `json:"seq,omitempty"`
	RequestID string `json:"request_id"`
	Reason    string `json:"reason"`
}

// Error reports a failure. RequestID is empty for session-level errors.
type Error struct {
	Seq       uint64 `json:"seq,omitempty"`
	RequestID string `json:"request_id"`
	Code      string `json:"code"`
	Details   string `json:"details"`
}

// ControlResponse answers a Control frame.
type ControlResponse struct {
	Seq       uint64          `json:"seq,omitempty"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
}

// Batch carries consecutive frames of the session's log in one WebSocket
// message, so a host that is behind catches up in a few large writes
// instead of one per frame. Frames[i] has seq Seq+i; the frames inside
// carry no seq of their own on the wire, and are never batches. Only a
// host that asked for batches in its init (with host_control) gets them.
type Batch struct {
	Seq    uint64
	Frames []Frame
}

func (Init) FrameType() string            { return TypeInit }
func (Query) FrameType() string           { return TypeQuery }
func (Control) FrameType() string         { return TypeControl }
func (Interrupt) FrameType() string       { return TypeInterrupt }
func (Stop) FrameType() string            { return TypeStop }
func (Input) FrameType() string           { return TypeInput }
func (Ready) FrameType() string           { return TypeReady }
func (Message) FrameType() string         { return TypeMessage }
func (Done) FrameType() string            { return TypeDone }
func (Error) FrameType() string           { return TypeError }
func (ControlResponse) FrameType() string { return TypeControlResponse }
func (Batch) FrameType() string           { return TypeBatch }

// Frame is any frame above.
type Frame interface {
	FrameType() string
}
