package agent

import (
	"errors"
	"fmt"
)

var (
	// ErrUnsupported matches an *UnsupportedError.
	ErrUnsupported = errors.New("agent: not supported by this agent")
	// ErrTurnInProgress: a prompt came while a turn runs.
	ErrTurnInProgress = errors.New("agent: a turn is in progress")
	// ErrNoTurn: an interrupt or steer came with no turn running.
	ErrNoTurn = errors.New("agent: no turn is running")
	// ErrUnknownApproval: no approval of the session has that id.
	ErrUnknownApproval = errors.New("agent: no such approval")
	// ErrAlreadyResolved matches an *AlreadyResolvedError.
	ErrAlreadyResolved = errors.New("agent: approval already resolved")
	// ErrSessionEnded: the session has ended.
	ErrSessionEnded = errors.New("agent: session ended")
	// ErrInvalidEvent matches an *InvalidEventError.
	ErrInvalidEvent = errors.New("agent: invalid event")
	// ErrInvalidOptions: a StartRequest the driver refuses (options its
	// policy does not allow, a fork with nothing to fork).
	ErrInvalidOptions = errors.New("agent: invalid start options")
	// ErrInvalidSettings matches an *InvalidSettingsError.
	ErrInvalidSettings = errors.New("agent: invalid settings")
	// ErrBadAnswer matches a *BadAnswerError.
	ErrBadAnswer = errors.New("agent: the answer does not fit the question")
	// ErrHistoryElsewhere matches a *HistoryElsewhereError.
	ErrHistoryElsewhere = errors.New("agent: the session's history is the host's")
)

// HistoryElsewhereError is Messages of a session started with
// StartRequest.HostKeepsHistory: Past holds the items from before the
// session (a resumed conversation's, from the agent's own store), which
// the host's log cannot know; the log has the rest.
type HistoryElsewhereError struct {
	Past []Item
}

func (e *HistoryElsewhereError) Error() string {
	return "agent: the session's history is in the host's log"
}

func (e *HistoryElsewhereError) Is(target error) bool { return target == ErrHistoryElsewhere }

// BadAnswerError refuses a resolution of a question approval whose
// answers are not among its options; the approval stays open.
type BadAnswerError struct {
	ApprovalID string
	Reason     string
}

func (e *BadAnswerError) Error() string {
	return fmt.Sprintf("agent: approval %s: %s", e.ApprovalID, e.Reason)
}

func (e *BadAnswerError) Is(target error) bool { return target == ErrBadAnswer }

// UnsupportedError is a capability the agent lacks.
type UnsupportedError struct {
	Agent      string
	Capability string // steer, fork, diff, …
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("agent: %s cannot %s", e.Agent, e.Capability)
}

func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// AlreadyResolvedError refuses a second resolution: the first one wins and
// is reported here, so the caller learns what was decided and by whom.
type AlreadyResolvedError struct {
	First Resolution
}

func (e *AlreadyResolvedError) Error() string {
	by := e.First.By
	if by == "" {
		by = string(e.First.Cause)
	}
	return fmt.Sprintf("agent: approval %s was already resolved (%s, by %s)", e.First.ApprovalID, e.First.Decision, by)
}

func (e *AlreadyResolvedError) Is(target error) bool { return target == ErrAlreadyResolved }

// InvalidEventError is an event that breaks the model's rules.
type InvalidEventError struct {
	Kind   Kind
	Reason string
}

func (e *InvalidEventError) Error() string {
	return fmt.Sprintf("agent: invalid %s event: %s", e.Kind, e.Reason)
}

func (e *InvalidEventError) Is(target error) bool { return target == ErrInvalidEvent }
