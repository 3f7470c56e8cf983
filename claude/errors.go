package claude

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/protocol/ndjson"
	"github.com/tetherhq/tether/transport"
)

var (
	// ErrCLINotFound matches a *CLINotFoundError.
	ErrCLINotFound = errors.New("claude: CLI not found")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("claude: client closed")
	// ErrNoResult reports output that ended without a result message.
	ErrNoResult = errors.New("claude: CLI output ended without a result")
	// ErrInitializeTimeout matches an initialize that got no answer in time.
	ErrInitializeTimeout = errors.New("claude: initialize timed out")
	// ErrControlTimeout matches a *ControlTimeoutError.
	ErrControlTimeout = errors.New("claude: control request timed out")
	// ErrProcessExited is wrapped by errors of requests still pending when
	// the CLI's output ended.
	ErrProcessExited = errors.New("claude: CLI process ended")
)

// ProcessError is a CLI that ended abnormally: exit code, signal, stderr tail.
type ProcessError = transport.ExitError

// LineTooLongError is a stdout line over Options.MaxLineSize; it is skipped.
type LineTooLongError = ndjson.LineTooLongError

// CLINotFoundError lists where the CLI was looked for.
type CLINotFoundError struct {
	Searched []string
}

func (e *CLINotFoundError) Error() string {
	return fmt.Sprintf("claude: CLI not found (looked in %s); install it with `npm install -g @anthropic-ai/claude-code` or set Options.CLIPath",
		strings.Join(e.Searched, ", "))
}

func (e *CLINotFoundError) Is(target error) bool { return target == ErrCLINotFound }

// ControlError is an error answer to a control request.
type ControlError struct {
	Subtype string
	Message string
	Code    string
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("claude: %s failed: %s", e.Subtype, e.Message)
}

// ControlTimeoutError is a control request without an answer in time.
type ControlTimeoutError struct {
	Subtype string
	Timeout time.Duration
}

func (e *ControlTimeoutError) Error() string {
	return fmt.Sprintf("claude: no answer to %s within %s", e.Subtype, e.Timeout)
}

func (e *ControlTimeoutError) Is(target error) bool {
	return target == ErrControlTimeout || (e.Subtype == "initialize" && target == ErrInitializeTimeout)
}

// ResultError describes a result with is_error set that is not an API
// error (those are *APIError): max turns, budget, an error during
// execution.
type ResultError struct {
	Subtype string
	Message string
}

func (e *ResultError) Error() string {
	return fmt.Sprintf("claude: turn failed (%s): %s", e.Subtype, e.Message)
}

// ErrAPI matches an *APIError.
var ErrAPI = errors.New("claude: the model API answered an error")

// APIError is a turn the model API failed: the CLI ends it with an error
// result whose subtype still says "success" and whose text is the API's
// answer ("API Error: 529 Overloaded"). Status is the HTTP status; Message
// is the API's own words. The CLI has already retried what it retries.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("claude: model API error %d: %s", e.Status, e.Message)
}

func (e *APIError) Is(target error) bool { return target == ErrAPI }

// AsAPIError returns the API error a failed result reports, or nil.
func AsAPIError(r *ResultMessage) *APIError {
	if r == nil || !r.IsError || r.APIErrorStatus == nil || *r.APIErrorStatus == 0 {
		return nil
	}
	status := *r.APIErrorStatus
	msg := strings.TrimSpace(r.Result)
	// "API Error: 400 fake invalid_request_error": the status is in the
	// field already.
	msg = strings.TrimPrefix(msg, "API Error:")
	msg = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(msg), strconv.Itoa(status)))
	if msg == "" {
		msg = strings.Join(r.Errors, "; ")
	}
	return &APIError{Status: status, Message: msg}
}

// ResultErr returns the error a failed result reports, nil otherwise: an
// *APIError when the model API failed the turn, else a *ResultError.
func ResultErr(r *ResultMessage) error {
	if r == nil || !r.IsError {
		return nil
	}
	if e := AsAPIError(r); e != nil {
		return e
	}
	msg := r.Result
	if msg == "" {
		msg = strings.Join(r.Errors, "; ")
	}
	return &ResultError{Subtype: r.Subtype, Message: msg}
}
