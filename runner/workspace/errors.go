package workspace

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrInvalidID matches a workspace id that ValidateID rejects.
	ErrInvalidID = errors.New("workspace: invalid id")
	// ErrBusy matches an Acquire of a workspace that has a live holder.
	ErrBusy = errors.New("workspace: busy")
	// ErrReleased is returned by a Workspace used after Release.
	ErrReleased = errors.New("workspace: released")
	// ErrGit matches a failed git command.
	ErrGit = errors.New("workspace: git failed")
)

// InvalidIDError is a rejected workspace id.
type InvalidIDError struct {
	ID     string
	Reason string
}

func (e *InvalidIDError) Error() string {
	id := e.ID
	if len(id) > 40 {
		id = id[:40] + "…"
	}
	return fmt.Sprintf("workspace: invalid id %q: %s", id, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidID) true.
func (e *InvalidIDError) Is(target error) bool { return target == ErrInvalidID }

// BusyError is an Acquire of a workspace someone else holds.
type BusyError struct {
	ID string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("workspace: %q is in use by another session", e.ID)
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// GitError is a git command that failed or was stopped.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := fmt.Sprintf("workspace: git %s: %v", strings.Join(e.Args, " "), e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// Is makes errors.Is(err, ErrGit) true.
func (e *GitError) Is(target error) bool { return target == ErrGit }

func (e *GitError) Unwrap() error { return e.Err }
