package claudecode

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Message types the CLI prints on stdout.
const (
	TypeSystem               = "system"
	TypeAssistant            = "assistant"
	TypeUser                 = "user"
	TypeResult               = "result"
	TypeStreamEvent          = "stream_event"
	TypeToolProgress         = "tool_progress"
	TypeToolUseSummary       = "tool_use_summary"
	TypeAuthStatus           = "auth_status"
	TypeRateLimitEvent       = "rate_limit_event"
	TypePromptSuggestion     = "prompt_suggestion"
	TypeConversationReset    = "conversation_reset"
	TypeControlRequest       = "control_request"
	TypeControlResponse      = "control_response"
	TypeControlCancelRequest = "control_cancel_request"
	TypeKeepAlive            = "keep_alive"
	TypeTranscriptMirror     = "transcript_mirror"
)

// Message is one parsed line of the CLI's stdout.
type Message interface {
	// Type is the line's "type" field ("" if it had none).
	Type() string
	// Raw is the exact line, without its newline. Do not modify it.
	Raw() []byte
}

// ParseError reports a line that is not a JSON object or does not match the
// shape its type promises. The session goes on after it.
type ParseError struct {
	Line []byte // the offending line, truncated to 512 bytes
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("claudecode: cannot parse line %q: %v", e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// ErrNotObject is wrapped by a ParseError for lines that are valid or invalid
// JSON but not an object (null, 42, "s", [..], plain text).
var ErrNotObject = errNotObject

// base carries what every message has.
type base struct {
	raw []byte
	// checked: the line was read whole by the validating fast path.
	checked bool
}

func (b *base) Raw() []byte { return b.raw }

func (b *base) rawChecked() bool { return b.checked }

// MaxCheckedDepth bounds the nesting of a line Checked vouches for.
const MaxCheckedDepth = maxFastDepth + 16

// Checked reports whether m's line is known to be valid JSON nested at
// most MaxCheckedDepth deep, because the parser that read it validated
// it whole on the way (the fast path for the hottest line types): a
// caller that needs that of the line need not check it again.
func Checked(m Message) bool {
	c, ok := m.(interface{ rawChecked() bool })
	return ok && c.rawChecked()
}

// Parse decodes one line. The line becomes the message's Raw and must not be
// modified afterwards. Unknown types come back as *Unknown, never an error.
func Parse(line []byte) (Message, error) {
	if m := fastParse(leadingType(line), line); m != nil {
		return m, nil
	}
	typ, err := peekType(line)
	if err != nil {
		return nil, parseError(line, err)
	}
	return parseAs(typ, line)
}

// ParseAs is Parse for a line whose type the caller already has from
// PeekType, sparing a second scan of the line.
func ParseAs(typ string, line []byte) (Message, error) {
	return parseAs(typ, line)
}

func parseAs(typ string, line []byte) (Message, error) {
	if typ == "" {
		// No type, not an object, or a type with escapes: find out which.
		if _, err := peekType(line); err != nil {
			return nil, parseError(line, err)
		}
		var probe struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			return nil, parseError(line, err)
		}
		typ = probe.Type
	}
	if m := fastParse(typ, line); m != nil {
		return m, nil
	}
	msg := newMessage(typ)
	if err := decode(line, msg); err != nil {
		return nil, parseError(line, err)
	}
	msg.setRaw(line)
	return msg, nil
}

type settable interface {
	Message
	setRaw([]byte)
}

func (b *base) setRaw(raw []byte) { b.raw = raw }

func newMessage(typ string) settable {
	switch typ {
	case TypeSystem:
		return &SystemMessage{}
	case TypeAssistant:
		return &AssistantMessage{}
	case TypeUser:
		return &UserMessage{}
	case TypeResult:
		return &ResultMessage{}
	case TypeStreamEvent:
		return &StreamEvent{}
	case TypeToolProgress:
		return &ToolProgress{}
	case TypeToolUseSummary:
		return &ToolUseSummary{}
	case TypeRateLimitEvent:
		return &RateLimitEvent{}
	case TypeControlRequest:
		return &ControlRequest{}
	case TypeControlResponse:
		return &ControlResponse{}
	case TypeControlCancelRequest:
		return &ControlCancelRequest{}
	case TypeKeepAlive:
		return &KeepAlive{}
	default:
		return &Unknown{MessageType: typ}
	}
}

func parseError(line []byte, err error) *ParseError {
	shown := line
	if len(shown) > 512 {
		shown = shown[:512]
	}
	return &ParseError{Line: append([]byte(nil), shown...), Err: err}
}

// IsParseError reports whether err is a skippable per-line parse failure.
func IsParseError(err error) bool {
	var pe *ParseError
	return errors.As(err, &pe)
}

// Unknown is a message of a type this package does not model (a newer CLI,
// or auth_status, prompt_suggestion and other rare types). Fields holds the
// decoded top-level object.
type Unknown struct {
	base
	MessageType string
	Fields      map[string]json.RawMessage
}

func (u *Unknown) Type() string { return u.MessageType }

func (u *Unknown) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, &u.Fields)
}

// KeepAlive is a heartbeat line; clients ignore it.
type KeepAlive struct{ base }

func (*KeepAlive) Type() string { return TypeKeepAlive }
