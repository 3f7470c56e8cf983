package codexapp

import (
	"encoding/json"
	"errors"
	"strconv"
)

// Message is one decoded line: a *Request, *Response or *Notification.
type Message interface {
	// Raw is the message's exact line, as it was decoded. Do not modify it.
	Raw() []byte
	isMessage()
}

// Params is the typed params of a request or notification: its Method is
// the method the params belong to.
type Params interface {
	Method() string
}

// Request is a request in either direction: {"id","method","params"}. From
// the server it must be answered (EncodeResult or EncodeError with its ID).
type Request struct {
	ID     ID
	Method string
	// Params is the exact params value, nil when absent.
	Params json.RawMessage
	// Payload is the typed params of a method this package types (see
	// newParams), nil for any other method.
	Payload Params
	raw     []byte
}

// Notification is a notification in either direction: {"method","params"}.
type Notification struct {
	Method string
	// Params is the exact params value, nil when absent.
	Params json.RawMessage
	// Payload is the typed params of a method this package types, nil for
	// any other method.
	Payload Params
	// EmittedAtMs is the server's emission time in Unix milliseconds, 0 when
	// absent. The 0.169.0 server stamps every notification with it, beside
	// "method"; the schema does not list it.
	EmittedAtMs int64
	raw         []byte
}

// Response answers a request: exactly one of Result and Error is set.
type Response struct {
	ID ID // zero only for an error answer to a request whose id was unreadable
	// Result is the exact result value, nil for an error answer.
	Result json.RawMessage
	Error  *RPCError
	raw    []byte
}

func (m *Request) Raw() []byte      { return m.raw }
func (m *Notification) Raw() []byte { return m.raw }
func (m *Response) Raw() []byte     { return m.raw }

func (*Request) isMessage()      {}
func (*Notification) isMessage() {}
func (*Response) isMessage()     {}

// MarshalJSON writes the message's exact line.
func (m *Request) MarshalJSON() ([]byte, error) { return m.raw, nil }

// MarshalJSON writes the message's exact line.
func (m *Notification) MarshalJSON() ([]byte, error) { return m.raw, nil }

// MarshalJSON writes the message's exact line.
func (m *Response) MarshalJSON() ([]byte, error) { return m.raw, nil }

// Err is the response's *RPCError as an error, nil for a result.
func (m *Response) Err() error {
	if m.Error == nil {
		return nil
	}
	return m.Error
}

// DecodeResult decodes the result into v, a pointer to the result type of
// the request this response answers (*ThreadStartResponse for thread/start,
// …). An error answer returns its *RPCError; a result of the wrong shape a
// *DecodeError matching ErrBadResult. v aliases the response's line.
func (m *Response) DecodeResult(v any) error {
	if m.Error != nil {
		return m.Error
	}
	if err := decode(m.Result, v); err != nil {
		return &DecodeError{Kind: ErrBadResult, ID: m.ID, Err: err}
	}
	if c, ok := v.(checker); ok {
		if err := c.check(); err != nil {
			return &DecodeError{Kind: ErrBadResult, ID: m.ID, Err: err}
		}
	}
	return nil
}

// envelope is every top-level field of a message, undecoded: nil when
// absent, "null" when null.
type envelope struct {
	ID          json.RawMessage `json:"id"`
	Method      json.RawMessage `json:"method"`
	Params      json.RawMessage `json:"params"`
	Result      json.RawMessage `json:"result"`
	Error       json.RawMessage `json:"error"`
	EmittedAtMs json.RawMessage `json:"emittedAtMs"`
}

// Decode decodes one line (without its newline; surrounding white space is
// allowed) and takes ownership of it: see the package doc on aliasing.
//
// On an error matching ErrBadParams the message is returned as well, with
// Payload nil, so that a request can still be answered; on any other error
// the message is nil.
func Decode(line []byte) (Message, error) {
	var env envelope
	if err := decode(line, &env); err != nil {
		return nil, classifySyntax(line, err)
	}
	switch {
	case env.Method != nil:
		return decodeCall(line, &env)
	case env.ID != nil:
		return decodeResponse(line, &env)
	}
	return nil, &DecodeError{Kind: ErrNotMessage}
}

// classifySyntax tells a line that is not JSON from JSON that is not an
// object, which the envelope decoder reports alike.
func classifySyntax(line []byte, err error) error {
	if i := firstNonSpace(line); i < len(line) && line[i] != '{' && json.Valid(line) {
		return &DecodeError{Kind: ErrNotObject}
	}
	return &DecodeError{Kind: ErrNotJSON, Err: err}
}

func firstNonSpace(b []byte) int {
	for i, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return i
		}
	}
	return len(b)
}

// decodeCall decodes a request (with "id") or a notification.
func decodeCall(line []byte, env *envelope) (Message, error) {
	var method string
	if err := decode(env.Method, &method); err != nil || method == "" {
		return nil, &DecodeError{Kind: ErrBadEnvelope, Err: errors.New("method is not a non-empty string")}
	}
	if env.Result != nil || env.Error != nil {
		return nil, &DecodeError{Kind: ErrBadEnvelope, Method: method, Err: errors.New("a request or notification has result or error")}
	}
	var params json.RawMessage
	if env.Params != nil {
		params = env.Params
	}
	if env.ID != nil {
		var id ID
		if err := id.UnmarshalJSON(env.ID); err != nil || id.IsZero() {
			return nil, &DecodeError{Kind: ErrBadEnvelope, Method: method, Err: errBadID}
		}
		req := &Request{ID: id, Method: method, Params: params, raw: line}
		p, err := decodeParams(method, params)
		if err != nil {
			return req, &DecodeError{Kind: ErrBadParams, Method: method, ID: id, Err: err}
		}
		req.Payload = p
		return req, nil
	}
	n := &Notification{Method: method, Params: params, EmittedAtMs: parseMillis(env.EmittedAtMs), raw: line}
	p, err := decodeParams(method, params)
	if err != nil {
		return n, &DecodeError{Kind: ErrBadParams, Method: method, Err: err}
	}
	n.Payload = p
	return n, nil
}

// parseMillis reads an integer, and gives 0 for anything else: the field is
// informational and outside the schema.
func parseMillis(raw json.RawMessage) int64 {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// decodeResponse decodes {"id", "result"} or {"id", "error"}.
func decodeResponse(line []byte, env *envelope) (Message, error) {
	var id ID
	if err := id.UnmarshalJSON(env.ID); err != nil {
		return nil, &DecodeError{Kind: ErrBadEnvelope, Err: err}
	}
	switch {
	case env.Params != nil:
		return nil, &DecodeError{Kind: ErrBadEnvelope, ID: id, Err: errors.New("params without method")}
	case (env.Result != nil) == (env.Error != nil):
		return nil, &DecodeError{Kind: ErrBadEnvelope, ID: id, Err: errors.New("a response needs exactly one of result and error")}
	case env.Result != nil:
		if id.IsZero() {
			return nil, &DecodeError{Kind: ErrBadEnvelope, Err: errors.New("a result with a null id")}
		}
		return &Response{ID: id, Result: env.Result, raw: line}, nil
	}
	var wire struct {
		Code    json.RawMessage `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := decode(env.Error, &wire); err != nil || wire.Code == nil || wire.Message == nil {
		return nil, &DecodeError{Kind: ErrBadEnvelope, ID: id, Err: errors.New("error is not {code, message}")}
	}
	code, err := strconv.ParseInt(string(wire.Code), 10, 64)
	if err != nil {
		return nil, &DecodeError{Kind: ErrBadEnvelope, ID: id, Err: errors.New("error code is not an integer")}
	}
	return &Response{ID: id, Error: &RPCError{Code: code, Message: *wire.Message, Data: wire.Data}, raw: line}, nil
}

// checker is implemented by payloads that verify the fields a driver relies
// on (ids the schema requires) after decoding.
type checker interface {
	check() error
}

// decodeParams types the params of a known method; nil, nil for others.
func decodeParams(method string, params json.RawMessage) (Params, error) {
	p := newParams(method)
	if p == nil {
		return nil, nil
	}
	if params == nil || string(params) == "null" {
		return nil, errors.New("params missing")
	}
	if err := decode(params, p); err != nil {
		return nil, err
	}
	if c, ok := p.(checker); ok {
		if err := c.check(); err != nil {
			return nil, err
		}
	}
	return p, nil
}
