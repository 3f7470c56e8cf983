package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Part types.
const (
	PartText       = "text"
	PartReasoning  = "reasoning"
	PartTool       = "tool"
	PartStepStart  = "step-start"
	PartStepFinish = "step-finish"
	PartFile       = "file"
	PartPatch      = "patch"
	PartSnapshot   = "snapshot"
	PartAgent      = "agent"
	PartRetry      = "retry"
	PartCompaction = "compaction"
	PartSubtask    = "subtask"
)

// Part is one piece of a message: *TextPart, *ReasoningPart, *ToolPart,
// *StepStartPart, *StepFinishPart, *FilePart, *PatchPart, *SnapshotPart,
// *AgentPart, *RetryPart, *CompactionPart, *SubtaskPart, or *UnknownPart
// for a type this package does not model.
type Part interface {
	// Base is what every part has: its id, session, message and type.
	Base() PartBase
}

// PartBase is what every part has. A part's id is stable while it grows:
// message.part.updated sends it whole again and message.part.delta names
// it.
type PartBase struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	Type      string `json:"type"`
}

func (b PartBase) Base() PartBase { return b }

// TextPart is text the model wrote (on an assistant message) or the
// prompt's text (on a user message). While it streams, Time.End is 0 and
// message.part.delta events with field "text" add to Text.
type TextPart struct {
	PartBase
	Text      string          `json:"text"`
	Synthetic bool            `json:"synthetic,omitempty"` // added by opencode, not typed by the user
	Ignored   bool            `json:"ignored,omitempty"`
	Time      *PartTime       `json:"time,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// PartTime is when a text or reasoning part started and ended (0 while it
// streams).
type PartTime struct {
	Start Millis `json:"start"`
	End   Millis `json:"end,omitempty"`
}

// ReasoningPart is the model's reasoning; it streams like a TextPart.
type ReasoningPart struct {
	PartBase
	Text     string          `json:"text"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Time     PartTime        `json:"time"`
}

// ToolPart is one tool call. message.part.updated sends it again at each
// state: pending (input still streaming), running (input known; bash
// streams its output in State.Metadata), then completed or error.
type ToolPart struct {
	PartBase
	CallID   string          `json:"callID"` // the model's tool call id; permission requests name it
	Tool     string          `json:"tool"`   // bash, edit, write, read, glob, grep, task, todowrite, webfetch, …
	State    ToolState       `json:"state"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Tool states.
const (
	ToolPending   = "pending"
	ToolRunning   = "running"
	ToolCompleted = "completed"
	ToolError     = "error"
)

// ToolState is a tool call's state. Status says which fields are set: Raw
// while pending (the input as streamed so far), Title and Metadata from
// running on, Output and Attachments when completed, Error when failed.
type ToolState struct {
	Status string          `json:"status"`
	Input  json.RawMessage `json:"input"`
	// Raw is the pending input's text as streamed so far.
	Raw   string `json:"raw,omitempty"`
	Title string `json:"title,omitempty"`
	// Metadata is the tool's own: bash reports {"output","exit","truncated"}
	// and streams output here while running; edit reports a diff.
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	Output      string          `json:"output,omitempty"`
	Error       string          `json:"error,omitempty"`
	Time        *ToolTime       `json:"time,omitempty"`
	Attachments []FilePart      `json:"attachments,omitempty"`
}

// ToolTime is when a tool call started and ended, and when its output was
// compacted away (0 if not).
type ToolTime struct {
	Start     Millis `json:"start"`
	End       Millis `json:"end,omitempty"`
	Compacted Millis `json:"compacted,omitempty"`
}

// StepStartPart opens one model call (a step) of an assistant message.
type StepStartPart struct {
	PartBase
	Snapshot string `json:"snapshot,omitempty"` // the work tree's snapshot before the step
}

// StepFinishPart closes a step with its reason (stop, tool-calls, length,
// …), cost and tokens.
type StepFinishPart struct {
	PartBase
	Reason   string  `json:"reason"`
	Snapshot string  `json:"snapshot,omitempty"`
	Cost     float64 `json:"cost"`
	Tokens   Tokens  `json:"tokens"`
}

// FilePart is a file attached to a message (or to a tool's result): its
// content is at URL, often a data: URL.
type FilePart struct {
	PartBase
	Mime     string          `json:"mime"`
	Filename string          `json:"filename,omitempty"`
	URL      string          `json:"url"`
	Source   *FilePartSource `json:"source,omitempty"`
}

// FilePartSource is where a file part came from: Type "file" (Path),
// "symbol" (Path, Range, Name, Kind) or "resource" (ClientName, URI, of an
// MCP server).
type FilePartSource struct {
	Type       string          `json:"type"`
	Text       FileSourceText  `json:"text"`
	Path       string          `json:"path,omitempty"`
	Range      json.RawMessage `json:"range,omitempty"` // {"start":{line,character},"end":{…}}
	Name       string          `json:"name,omitempty"`
	Kind       int             `json:"kind,omitempty"`
	ClientName string          `json:"clientName,omitempty"`
	URI        string          `json:"uri,omitempty"`
}

// FileSourceText is the prompt text that referred to a file and where.
type FileSourceText struct {
	Value string  `json:"value"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// PatchPart lists the files a step changed, by snapshot hash.
type PatchPart struct {
	PartBase
	Hash  string   `json:"hash"`
	Files []string `json:"files"`
}

// SnapshotPart records a work tree snapshot.
type SnapshotPart struct {
	PartBase
	Snapshot string `json:"snapshot"`
}

// AgentPart is an @agent mention in a prompt.
type AgentPart struct {
	PartBase
	Name   string       `json:"name"`
	Source *AgentSource `json:"source,omitempty"`
}

// AgentSource is the prompt text of an agent mention and where it is.
type AgentSource struct {
	Value string `json:"value"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// RetryPart records a failed model call that opencode retries.
type RetryPart struct {
	PartBase
	Attempt int        `json:"attempt"`
	Error   NamedError `json:"error"`
	Time    RetryTime  `json:"time"`
}

// RetryTime is when a retry was recorded.
type RetryTime struct {
	Created Millis `json:"created"`
}

// CompactionPart marks a compaction of the session's history.
type CompactionPart struct {
	PartBase
	Auto        bool   `json:"auto"`
	Overflow    bool   `json:"overflow,omitempty"`
	TailStartID string `json:"tail_start_id,omitempty"`
}

// SubtaskPart is a task handed to a subagent.
type SubtaskPart struct {
	PartBase
	Prompt      string       `json:"prompt"`
	Description string       `json:"description"`
	Agent       string       `json:"agent"`
	Model       *PromptModel `json:"model,omitempty"`
	Command     string       `json:"command,omitempty"`
}

// UnknownPart is a part of a type this package does not model; Raw is the
// whole part object.
type UnknownPart struct {
	PartBase
	Raw json.RawMessage `json:"-"`
}

func (p *UnknownPart) MarshalJSON() ([]byte, error) {
	if p.Raw == nil {
		return json.Marshal(p.PartBase)
	}
	return p.Raw, nil
}

// ErrNotObject is wrapped by the error for a value that should be a JSON
// object and is not (null, a number, a string, an array).
var ErrNotObject = errors.New("not a JSON object")

// DecodePart decodes one part object; a type this package does not model
// gives an *UnknownPart. data must not be modified while the part lives.
func DecodePart(data []byte) (Part, error) {
	p, err := decodePart(data)
	if err != nil {
		return nil, fmt.Errorf("opencode: %w", err)
	}
	return p, nil
}

func decodePart(data []byte) (Part, error) {
	if !isObject(data) {
		return nil, fmt.Errorf("part: %w", ErrNotObject)
	}
	var base PartBase
	if err := decode(data, &base); err != nil {
		return nil, fmt.Errorf("part: %w", err)
	}
	p := newPart(base.Type)
	if p == nil {
		return &UnknownPart{PartBase: base, Raw: data}, nil
	}
	if err := decode(data, p); err != nil {
		return nil, fmt.Errorf("%s part: %w", base.Type, err)
	}
	return p, nil
}

func newPart(typ string) Part {
	switch typ {
	case PartText:
		return &TextPart{}
	case PartReasoning:
		return &ReasoningPart{}
	case PartTool:
		return &ToolPart{}
	case PartStepStart:
		return &StepStartPart{}
	case PartStepFinish:
		return &StepFinishPart{}
	case PartFile:
		return &FilePart{}
	case PartPatch:
		return &PatchPart{}
	case PartSnapshot:
		return &SnapshotPart{}
	case PartAgent:
		return &AgentPart{}
	case PartRetry:
		return &RetryPart{}
	case PartCompaction:
		return &CompactionPart{}
	case PartSubtask:
		return &SubtaskPart{}
	}
	return nil
}

// Parts is a message's parts, decoded one by one with DecodePart.
type Parts []Part

func (ps *Parts) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*ps = nil
		return nil
	}
	var raws []json.RawMessage
	if err := decode(data, &raws); err != nil {
		return fmt.Errorf("parts: %w", err)
	}
	out := make(Parts, len(raws))
	for i, raw := range raws {
		p, err := decodePart(raw)
		if err != nil {
			return fmt.Errorf("parts[%d]: %w", i, err)
		}
		out[i] = p
	}
	*ps = out
	return nil
}

// isObject reports whether data, past leading white space, starts an
// object.
func isObject(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}
