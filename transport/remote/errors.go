package remote

import (
	"errors"
	"fmt"
)

var (
	// ErrInitTimeout: the runner did not answer init in time.
	ErrInitTimeout = errors.New("remote: no ready from the runner in time")
	// ErrUnauthorized: the runner refused the token.
	ErrUnauthorized = errors.New("remote: the runner refused the token")
	// ErrGaveUp: reconnecting did not succeed within the reconnect window.
	ErrGaveUp = errors.New("remote: gave up reconnecting")
)

// RunnerError is an error frame from the runner.
type RunnerError struct {
	Code    string
	Details string
}

func (e *RunnerError) Error() string {
	return fmt.Sprintf("remote: runner error %s: %s", e.Code, e.Details)
}
