package claudecode

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Control request subtypes the CLI sends to the SDK.
const (
	SubtypeCanUseTool   = "can_use_tool"
	SubtypeHookCallback = "hook_callback"
	SubtypeMCPMessage   = "mcp_message"
	SubtypeElicitation  = "elicitation"
)

// ControlRequest is a control_request line. From the CLI it asks the SDK for
// a decision; Request holds the whole request object (with "subtype").
type ControlRequest struct {
	base
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	subtype   string
}

func (*ControlRequest) Type() string { return TypeControlRequest }

// Subtype is request.subtype.
func (r *ControlRequest) Subtype() string { return r.subtype }

func (r *ControlRequest) UnmarshalJSON(data []byte) error {
	type plain ControlRequest
	var p struct {
		plain
		Request json.RawMessage `json:"request"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	var sub struct {
		Subtype string `json:"subtype"`
	}
	if len(p.Request) > 0 {
		if err := json.Unmarshal(p.Request, &sub); err != nil {
			return fmt.Errorf("control_request.request: %w", err)
		}
	}
	if p.plain.RequestID == "" {
		return errors.New("control_request without request_id")
	}
	*r = ControlRequest(p.plain)
	r.Request, r.subtype = p.Request, sub.Subtype
	return nil
}

// Decode unmarshals the request object into v (one of the *Request types).
func (r *ControlRequest) Decode(v any) error {
	if err := json.Unmarshal(r.Request, v); err != nil {
		return fmt.Errorf("claudecode: %s request: %w", r.subtype, err)
	}
	return nil
}

// ControlResponse is a control_response line.
type ControlResponse struct {
	base
	Response ControlResponseBody `json:"response"`
}

func (*ControlResponse) Type() string { return TypeControlResponse }

// ControlResponseBody is the inner object of a control_response.
type ControlResponseBody struct {
	Subtype   string          `json:"subtype"` // "success" or "error"
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`
	ErrorCode string          `json:"error_code,omitempty"`
	// PendingPermissionRequests may accompany an error (TS SDK shape).
	PendingPermissionRequests json.RawMessage `json:"pending_permission_requests,omitempty"`
}

// ControlCancelRequest tells the other side to abandon a request it is
// handling; no response follows.
type ControlCancelRequest struct {
	base
	RequestID string `json:"request_id"`
}

func (*ControlCancelRequest) Type() string { return TypeControlCancelRequest }

// RequestIDs makes ids of the form req_<n>_<8 hex>, as the Python SDK does.
// Not safe for concurrent use; the caller serialises.
type RequestIDs struct{ n uint64 }

// Next returns a fresh id.
func (g *RequestIDs) Next() string {
	g.n++
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "req_" + strconv.FormatUint(g.n, 10) + "_" + hex.EncodeToString(b[:])
}

// OutboundRequest is a control request the SDK sends to the CLI.
type OutboundRequest interface {
	Subtype() string
}

// EncodeControlRequest builds a control_request line (no newline).
func EncodeControlRequest(requestID string, req OutboundRequest) ([]byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("claudecode: encode %s: %w", req.Subtype(), err)
	}
	body, err = withField(body, "subtype", req.Subtype())
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
	}{TypeControlRequest, requestID, body})
}

// EncodeControlSuccess builds a success control_response; payload may be nil.
func EncodeControlSuccess(requestID string, payload any) ([]byte, error) {
	var raw json.RawMessage
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return nil, fmt.Errorf("claudecode: encode response: %w", err)
		}
		raw = b
	}
	return json.Marshal(controlResponseLine{TypeControlResponse, ControlResponseBody{
		Subtype: "success", RequestID: requestID, Response: raw,
	}})
}

// EncodeControlError builds an error control_response.
func EncodeControlError(requestID, message string) ([]byte, error) {
	return json.Marshal(controlResponseLine{TypeControlResponse, ControlResponseBody{
		Subtype: "error", RequestID: requestID, Error: message,
	}})
}

// EncodeControlCancel builds a control_cancel_request line.
func EncodeControlCancel(requestID string) ([]byte, error) {
	return json.Marshal(struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
	}{TypeControlCancelRequest, requestID})
}

type controlResponseLine struct {
	Type     string              `json:"type"`
	Response ControlResponseBody `json:"response"`
}
