package sandbox

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrUnavailable matches a host where bwrap is missing or cannot
	// create the sandbox.
	ErrUnavailable = errors.New("sandbox: bubblewrap unavailable")
	// ErrInvalidPolicy matches a Policy that Wrap refuses.
	ErrInvalidPolicy = errors.New("sandbox: invalid policy")
)

// UnavailableError says why bwrap cannot be used here.
type UnavailableError struct {
	Path   string // the bwrap looked for or run
	Probe  string // what was tried
	Output string // bwrap's own words, trimmed
	Err    error
}

func (e *UnavailableError) Error() string {
	msg := fmt.Sprintf("sandbox: bubblewrap unavailable (%s): %v", e.Probe, e.Err)
	if e.Output != "" {
		msg += ": " + e.Output
	}
	return msg
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *UnavailableError) Unwrap() error { return e.Err }

// PolicyError is a Policy field Wrap refuses.
type PolicyError struct {
	Field  string
	Reason string
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("sandbox: policy %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidPolicy) true.
func (e *PolicyError) Is(target error) bool { return target == ErrInvalidPolicy }

func trimOutput(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 1000 {
		s = s[:1000] + "…"
	}
	return s
}
