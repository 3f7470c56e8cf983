package remote

import (
	"errors"
	"fmt"

	v1 "github.com/tetherhq/tether/protocol/runnerv1"
)

var (
	// ErrInitTimeout: the runner did not answer init in time.
	ErrInitTimeout = errors.New("remote: no ready from the runner in time")
	// ErrUnauthorized: the runner refused the token.
	ErrUnauthorized = errors.New("remote: the runner refused the token")
	// ErrGaveUp: reconnecting did not succeed within the reconnect window.
	ErrGaveUp = errors.New("remote: gave up reconnecting")
	// ErrLastSeqAhead: the runner's log of the session ends before frames
	// this host received, further than a runner crash can explain, so the
	// session cannot be resumed. It matches the *RunnerError that carries
	// the code last_seq_ahead. (Frames lost with a crash are not an error:
	// the restarted session numbers on after the host's last frame.)
	ErrLastSeqAhead = errors.New("remote: the runner's log ends before the frames received")
	// ErrTurnLost is the error a turn ends with when the runner had to
	// start a new agent for the session before the turn's result (it was
	// killed, say): the turn's result message says so in its errors.
	ErrTurnLost = errors.New("remote: the runner restarted the agent during this turn; the turn was lost")
)

// RunnerError is an error frame from the runner.
type RunnerError struct {
	Code    string
	Details string
}

func (e *RunnerError) Error() string {
	return fmt.Sprintf("remote: runner error %s: %s", e.Code, e.Details)
}

// Is makes errors.Is(err, ErrLastSeqAhead) true for that code.
func (e *RunnerError) Is(target error) bool {
	return target == ErrLastSeqAhead && e.Code == v1.CodeLastSeqAhead
}
