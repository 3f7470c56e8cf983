package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Sentinels a *ResponseError matches with errors.Is.
var (
	ErrBadRequest  = errors.New("opencode: bad request")  // 400
	ErrNotFound    = errors.New("opencode: not found")    // 404: no such session, message or request
	ErrSessionBusy = errors.New("opencode: session busy") // 409: the session runs a turn
	ErrServer      = errors.New("opencode: server error") // 5xx
)

// ErrorBody is an error answer's body. The server has two forms: {"name",
// "data": {"message", "kind"}} (BadRequest, NotFoundError) and {"_tag",
// "message", …} (InvalidRequestError, SessionBusyError,
// PermissionNotFoundError, …); both decode here.
type ErrorBody struct {
	Name string        `json:"name,omitempty"`
	Data ErrorBodyData `json:"data"`

	Tag       string `json:"_tag,omitempty"`
	Message   string `json:"message,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Field     string `json:"field,omitempty"`
	SessionID string `json:"sessionID,omitempty"`
	RequestID string `json:"requestID,omitempty"`
}

// ErrorBodyData is the data of the name form.
type ErrorBodyData struct {
	Message string `json:"message,omitempty"`
	Kind    string `json:"kind,omitempty"` // Params, Headers, Query, Body, Payload
}

// ResponseError is a non-2xx answer: its status and what its body says.
type ResponseError struct {
	StatusCode int
	Body       ErrorBody // zero if the body was not a JSON error
	Text       string    // the body, truncated to 512 bytes, when it was not one
}

// ParseResponseError builds the error for a non-2xx answer from its status
// and body (which it does not keep).
func ParseResponseError(statusCode int, body []byte) *ResponseError {
	e := &ResponseError{StatusCode: statusCode}
	var b ErrorBody
	// encoding/json copies the strings: the caller's body buffer is free.
	if isObject(body) && json.Unmarshal(body, &b) == nil && (b.Name != "" || b.Tag != "") {
		e.Body = b
		return e
	}
	shown := body
	if len(shown) > 512 {
		shown = shown[:512]
	}
	e.Text = string(shown)
	return e
}

// Kind is the error's name: the body's name or _tag.
func (e *ResponseError) Kind() string {
	if e.Body.Tag != "" {
		return e.Body.Tag
	}
	return e.Body.Name
}

// Message is the body's message, or its text when it was not a JSON error.
func (e *ResponseError) Message() string {
	switch {
	case e.Body.Message != "":
		return e.Body.Message
	case e.Body.Data.Message != "":
		return e.Body.Data.Message
	}
	return e.Text
}

func (e *ResponseError) Error() string {
	msg := fmt.Sprintf("opencode: HTTP %d", e.StatusCode)
	if k := e.Kind(); k != "" {
		msg += " " + k
	}
	if m := e.Message(); m != "" {
		msg += ": " + m
	}
	return msg
}

func (e *ResponseError) Is(target error) bool {
	switch target {
	case ErrBadRequest:
		return e.StatusCode == http.StatusBadRequest
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrSessionBusy:
		return e.StatusCode == http.StatusConflict || e.Body.Tag == "SessionBusyError"
	case ErrServer:
		return e.StatusCode >= 500
	}
	return false
}
