package claude

import (
	"errors"
	"fmt"
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

// ResultError describes a result with is_error set.
type ResultError struct {
	Subtype        string
	Message        string
	APIErrorStatus int
}

func (e *ResultError) Error() string {
	if e.APIErrorStatus != 0 {
		return fmt.Sprintf("claude: turn failed (%s, API status %d): %s", e.Subtype, e.APIErrorStatus, e.Message)
	}
	return fmt.Sprintf("claude: turn failed (%s): %s", e.Subtype, e.Message)
}

// ResultErr returns a *ResultError for a failed result, nil otherwise.
func ResultErr(r *ResultMessage) error {
	if r == nil || !r.IsError {
		return nil
	}
	msg := r.Result
	if msg == "" {
		msg = strings.Join(r.Errors, "; ")
	}
	e := &ResultError{Subtype: r.Subtype, Message: msg}
	if r.APIErrorStatus != nil {
		e.APIErrorStatus = *r.APIErrorStatus
	}
	return e
}
