package codexapp

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNoID is returned when a request or a result is encoded with the zero
// ID: both need one.
var ErrNoID = errors.New("codexapp: a request or result needs an id")

// EncodeCall returns the line of the request {"id","method","params"} for
// typed params; see EncodeRequest.
func EncodeCall(id ID, p Params) ([]byte, error) {
	return EncodeRequest(id, p.Method(), p)
}

// EncodeRequest returns the line (without the newline) of the request
// {"id","method","params"}. params is marshalled with encoding/json; nil
// leaves "params" out.
func EncodeRequest(id ID, method string, params any) ([]byte, error) {
	if id.IsZero() {
		return nil, fmt.Errorf("codexapp: encode %s: %w", method, ErrNoID)
	}
	return encodeEnvelope(wireMessage{ID: &id, Method: method}, method, params)
}

// EncodeNotification returns the line of the notification
// {"method","params"}; nil params leaves "params" out ("initialized" has
// none).
func EncodeNotification(method string, params any) ([]byte, error) {
	return encodeEnvelope(wireMessage{Method: method}, method, params)
}

// EncodeResult returns the line of the answer {"id","result"} to the request
// id, e.g. a CommandExecutionApprovalResponse for an approval request. A nil
// result is encoded as {}.
func EncodeResult(id ID, result any) ([]byte, error) {
	if id.IsZero() {
		return nil, fmt.Errorf("codexapp: encode result: %w", ErrNoID)
	}
	raw := json.RawMessage("{}")
	if result != nil {
		b, err := marshal(result)
		if err != nil {
			return nil, fmt.Errorf("codexapp: encode result for id %s: %w", id, err)
		}
		raw = b
	}
	return marshal(wireMessage{ID: &id, Result: raw})
}

// EncodeError returns the line of the error answer {"id","error"} to the
// request id; the zero ID encodes as null.
func EncodeError(id ID, e *RPCError) ([]byte, error) {
	if e == nil {
		return nil, errors.New("codexapp: encode error: nil *RPCError")
	}
	b, err := marshal(wireMessage{ID: &id, Error: e})
	if err != nil {
		return nil, fmt.Errorf("codexapp: encode error for id %s: %w", id, err)
	}
	return b, nil
}

// wireMessage is the envelope as written: the field order matches what the
// server prints for requests ({"id","method","params"}).
type wireMessage struct {
	ID     *ID             `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

func encodeEnvelope(m wireMessage, method string, params any) ([]byte, error) {
	if method == "" {
		return nil, errors.New("codexapp: encode: empty method")
	}
	if params != nil {
		b, err := marshal(params)
		if err != nil {
			return nil, fmt.Errorf("codexapp: encode %s params: %w", method, err)
		}
		m.Params = b
	}
	return marshal(m)
}
