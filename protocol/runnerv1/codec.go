package runnerv1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/tetherhq/tether/internal/jsonscan"
)

// FrameError is a frame the peer must be told about with an error frame of
// this Code. The connection goes on.
type FrameError struct {
	Code    string
	Details string
}

func (e *FrameError) Error() string { return "runnerv1: " + e.Code + ": " + e.Details }

// ErrBadFrame matches every *FrameError.
var ErrBadFrame = errors.New("runnerv1: bad frame")

func (e *FrameError) Is(target error) bool { return target == ErrBadFrame }

func frameError(code, format string, args ...any) *FrameError {
	return &FrameError{Code: code, Details: fmt.Sprintf(format, args...)}
}

// anyFrame has the fields of every frame, so a frame decodes in one pass.
type anyFrame struct {
	Type            *string           `json:"type"`
	ProtocolVersion int               `json:"protocol_version"`
	SessionOpts     json.RawMessage   `json:"session_opts"`
	WorkspaceID     string            `json:"workspace_id"`
	Resume          string            `json:"resume"`
	LastSeq         uint64            `json:"last_seq"`
	HostControl     bool              `json:"host_control"`
	Batch           bool              `json:"batch"`
	RequestID       string            `json:"request_id"`
	Prompt          json.RawMessage   `json:"prompt"`
	Opts            json.RawMessage   `json:"opts"`
	Subtype         string            `json:"subtype"`
	Params          json.RawMessage   `json:"params"`
	Seq             uint64            `json:"seq"`
	SessionID       string            `json:"session_id"`
	Resumed         bool              `json:"resumed"`
	InputSeq        uint64            `json:"input_seq"`
	N               uint64            `json:"n"`
	Payload         string            `json:"payload"`
	Line            json.RawMessage   `json:"line"`
	Reason          string            `json:"reason"`
	Code            string            `json:"code"`
	Details         string            `json:"details"`
	Response        json.RawMessage   `json:"response"`
	Frames          []json.RawMessage `json:"frames"`
}

// Decode parses one frame from either side.
func Decode(data []byte) (Frame, error) {
	return decode(data, true)
}

// decode parses a frame; a frame inside a batch (top false) may not be a
// batch itself, which is checked before its frames are decoded, so nesting
// costs nothing.
func decode(data []byte, top bool) (Frame, error) {
	var a anyFrame
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, frameError(CodeInvalidFrame, "not a valid frame: %v", err)
	}
	if a.Type == nil {
		return nil, frameError(CodeInvalidFrame, `frame has no "type"`)
	}
	if !top && *a.Type == TypeBatch {
		return nil, frameError(CodeInvalidFrame, "a batch holds no batch frames")
	}
	frame, err := a.frame()
	if err != nil {
		return nil, err
	}
	if err := validate(frame); err != nil {
		return nil, err
	}
	return frame, nil
}

func (a *anyFrame) frame() (Frame, error) {
	switch *a.Type {
	case TypeInit:
		return Init{ProtocolVersion: a.ProtocolVersion, SessionOpts: a.SessionOpts, WorkspaceID: a.WorkspaceID,
			Resume: a.Resume, LastSeq: a.LastSeq, HostControl: a.HostControl, Batch: a.Batch}, nil
	case TypeQuery:
		return Query{RequestID: a.RequestID, Prompt: a.Prompt, Opts: a.Opts}, nil
	case TypeControl:
		return Control{RequestID: a.RequestID, Subtype: a.Subtype, Params: a.Params}, nil
	case TypeInterrupt:
		return Interrupt{}, nil
	case TypeStop:
		return Stop{}, nil
	case TypeInput:
		var line string
		if err := json.Unmarshal(a.Line, &line); len(a.Line) > 0 && err != nil {
			return nil, frameError(CodeInvalidFrame, "input line must be a string")
		}
		return Input{Line: line, N: a.N}, nil
	case TypeReady:
		return Ready{Seq: a.Seq, SessionID: a.SessionID, Resumed: a.Resumed, InputSeq: a.InputSeq}, nil
	case TypeMessage:
		return Message{Seq: a.Seq, RequestID: a.RequestID, Payload: a.Payload, Line: a.Line}, nil
	case TypeDone:
		return Done{Seq: a.Seq, RequestID: a.RequestID, Reason: a.Reason}, nil
	case TypeError:
		return Error{Seq: a.Seq, RequestID: a.RequestID, Code: a.Code, Details: a.Details}, nil
	case TypeControlResponse:
		return ControlResponse{Seq: a.Seq, RequestID: a.RequestID, Response: a.Response}, nil
	case TypeBatch:
		return decodeBatch(a.Seq, a.N, a.Frames)
	}
	return nil, frameError(CodeUnknownType, "unknown frame type %q", *a.Type)
}

func validate(f Frame) error {
	switch v := f.(type) {
	case Init:
		if v.ProtocolVersion != Version {
			return frameError(CodeUnsupportedVersion, "protocol_version %d is not supported (this runner speaks %d)", v.ProtocolVersion, Version)
		}
		if len(v.SessionOpts) > 0 && !isObjectOrNull(v.SessionOpts) {
			return frameError(CodeInvalidOptions, "session_opts must be an object")
		}
	case Query:
		if v.RequestID == "" {
			return frameError(CodeInvalidFrame, "query needs a request_id")
		}
		if !isPrompt(v.Prompt) {
			return frameError(CodeInvalidFrame, "query prompt must be a non-empty string or a list of content blocks")
		}
	case Control:
		if v.RequestID == "" || v.Subtype == "" {
			return frameError(CodeInvalidFrame, "control needs a request_id and a subtype")
		}
		if len(v.Params) > 0 && !isObjectOrNull(v.Params) {
			return frameError(CodeInvalidFrame, "control params must be an object")
		}
	case Input:
		if v.Line == "" || bytes.ContainsAny([]byte(v.Line), "\n\r") {
			return frameError(CodeInvalidFrame, "input line must be one non-empty line")
		}
	}
	return nil
}

func isObjectOrNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return bytes.HasPrefix(raw, []byte("{")) || bytes.Equal(raw, []byte("null"))
}

func isPrompt(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if bytes.HasPrefix(raw, []byte("[")) {
		return len(raw) > 2
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s != ""
}

// Encode marshals a frame with its type.
func Encode(f Frame) ([]byte, error) {
	switch v := f.(type) {
	case Message:
		if len(v.Line) == 0 {
			return AppendMessage(nil, v), nil
		}
	case Batch:
		return encodeBatch(v)
	}
	body, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("runnerv1: encode %s: %w", f.FrameType(), err)
	}
	out := make([]byte, 0, len(body)+len(f.FrameType())+10)
	out = append(out, `{"type":"`...)
	out = append(out, f.FrameType()...)
	out = append(out, '"')
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// AppendMessage encodes a message frame without going through reflection:
// it is on the hot path of every agent line.
func AppendMessage(dst []byte, m Message) []byte {
	return AppendMessageLine(dst, m.Seq, m.RequestID, m.Payload)
}

// AppendMessageLine encodes a message frame around an agent's line; seq 0
// leaves seq out (see WithSeq).
func AppendMessageLine[P string | []byte](dst []byte, seq uint64, requestID string, payload P) []byte {
	dst = append(dst, `{"type":"message"`...)
	if seq != 0 {
		dst = append(dst, `,"seq":`...)
		dst = strconv.AppendUint(dst, seq, 10)
	}
	dst = append(dst, `,"request_id":`...)
	dst = appendString(dst, requestID)
	dst = append(dst, `,"payload":`...)
	dst = appendString(dst, payload)
	return append(dst, '}')
}

// AppendMessageRaw encodes a message frame that embeds line, a JSON
// object, as is (relay sessions); seq 0 leaves seq out.
func AppendMessageRaw(dst []byte, seq uint64, requestID string, line []byte) []byte {
	dst = append(dst, `{"type":"message"`...)
	if seq != 0 {
		dst = append(dst, `,"seq":`...)
		dst = strconv.AppendUint(dst, seq, 10)
	}
	dst = append(dst, `,"request_id":`...)
	dst = appendString(dst, requestID)
	dst = append(dst, `,"line":`...)
	dst = append(dst, line...)
	return append(dst, '}')
}

// DecodeRawMessage is the fast path for the frames AppendMessageRaw and
// WithSeq produce: {"seq":N,"type":"message","request_id":"…","line":…}.
// It returns ok false for anything else (use Decode); line aliases data
// and is not validated here.
func DecodeRawMessage(data []byte) (seq uint64, requestID string, line []byte, ok bool) {
	rest, ok := bytes.CutPrefix(data, []byte(`{"seq":`))
	if !ok {
		return 0, "", nil, false
	}
	seq, rest, ok = cutSeq(rest)
	if !ok {
		return 0, "", nil, false
	}
	rest, ok = bytes.CutPrefix(rest, []byte(`,"type":"message","request_id":"`))
	if !ok {
		return 0, "", nil, false
	}
	requestID, line, ok = rawMessageRest(rest)
	return seq, requestID, line, ok
}

// DecodeRawLine is DecodeRawMessage for a frame without seq, as
// AppendMessageRaw stores it and a batch carries it.
func DecodeRawLine(frame []byte) (requestID string, line []byte, ok bool) {
	rest, ok := bytes.CutPrefix(frame, []byte(`{"type":"message","request_id":"`))
	if !ok {
		return "", nil, false
	}
	return rawMessageRest(rest)
}

// rawMessageRest reads `…","line":{…}}`, what follows the opening quote of
// a raw message's request id.
func rawMessageRest(rest []byte) (requestID string, line []byte, ok bool) {
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", nil, false
	}
	requestID = string(rest[:end])
	rest, ok = bytes.CutPrefix(rest[end+1:], []byte(`,"line":`))
	if !ok || len(rest) < 3 || rest[0] != '{' || rest[len(rest)-1] != '}' || rest[len(rest)-2] != '}' {
		return "", nil, false
	}
	return requestID, rest[:len(rest)-1], true
}

// cutSeq reads a seq as encoding/json writes it (digits, no leading zero,
// at least 1) from the start of data.
func cutSeq(data []byte) (seq uint64, rest []byte, ok bool) {
	i := 0
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	if i == 0 || data[0] == '0' {
		return 0, nil, false
	}
	seq, err := strconv.ParseUint(string(data[:i]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return seq, data[i:], true
}

// WithSeq numbers an encoded frame that was stored without its seq: the
// runner logs frames first and learns their seq from the log.
func WithSeq(dst, frame []byte, seq uint64) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	if len(frame) > 2 {
		dst = append(dst, ',')
	}
	return append(dst, frame[1:]...)
}

// appendString writes s as a JSON string, as encoding/json would without
// HTML escaping.
func appendString[S string | []byte](dst []byte, s S) []byte {
	return jsonscan.AppendString(dst, s, false)
}
