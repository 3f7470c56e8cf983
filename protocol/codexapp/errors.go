package codexapp

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Kinds of malformed input. A *DecodeError matches exactly one of them with
// errors.Is.
var (
	// ErrNotJSON: the line is not one JSON value.
	ErrNotJSON = errors.New("codexapp: not JSON")
	// ErrNotObject: the line is JSON but not an object.
	ErrNotObject = errors.New("codexapp: not a JSON object")
	// ErrNotMessage: the object has neither "method" nor "id".
	ErrNotMessage = errors.New("codexapp: neither method nor id")
	// ErrBadEnvelope: "id", "method", "result" or "error" has the wrong type,
	// or they do not combine into a request, response or notification.
	ErrBadEnvelope = errors.New("codexapp: malformed JSON-RPC envelope")
	// ErrBadParams: the params of a method this package types do not have
	// that type's shape. Decode still returns the message (without Payload),
	// so a driver can answer a request with CodeInvalidParams.
	ErrBadParams = errors.New("codexapp: params do not match the method")
	// ErrBadResult: a result does not have the shape DecodeResult was asked
	// for.
	ErrBadResult = errors.New("codexapp: result does not match its type")
)

// DecodeError reports input this package could not decode. Kind is one of
// the Err* kinds above; Method and ID are set when they could be read.
type DecodeError struct {
	Kind   error
	Method string
	ID     ID
	Err    error // the cause, when there is one
}

func (e *DecodeError) Error() string {
	msg := e.Kind.Error()
	if e.Method != "" {
		msg += fmt.Sprintf(" (method %q", e.Method)
		if !e.ID.IsZero() {
			msg += ", id " + e.ID.String()
		}
		msg += ")"
	} else if !e.ID.IsZero() {
		msg += " (id " + e.ID.String() + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap gives both the kind and the cause to errors.Is and errors.As.
func (e *DecodeError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// MissingFieldError is the cause of an ErrBadParams or ErrBadResult when a
// field a driver relies on (an id the schema requires) is absent or empty.
type MissingFieldError struct {
	Field string // JSON path, e.g. "turn.id"
}

func (e *MissingFieldError) Error() string { return "missing " + e.Field }

// require returns a *MissingFieldError for the first empty value of pairs
// (path, value, path, value, …).
func require(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return &MissingFieldError{Field: pairs[i]}
		}
	}
	return nil
}

// JSON-RPC error codes. The codex server answers an unknown method and
// params of the wrong type with CodeInvalidRequest, not CodeMethodNotFound
// or CodeInvalidParams (seen with 0.169.0).
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeServerOverloaded = -32001 // "Server overloaded; retry later.": retry with backoff
)

// ErrServerOverloaded matches an *RPCError with CodeServerOverloaded.
var ErrServerOverloaded = errors.New("codexapp: server overloaded")

// RPCError is the error of an error response: {"code","message","data"}.
type RPCError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	// Data is the exact data value, nil when absent.
	Data json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("codexapp: error %d: %s", e.Code, e.Message)
}

// Is matches ErrServerOverloaded for CodeServerOverloaded.
func (e *RPCError) Is(target error) bool {
	return target == ErrServerOverloaded && e.Code == CodeServerOverloaded
}
