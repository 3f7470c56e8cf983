package shim

import (
	"errors"
	"fmt"
)

// ErrOutOfRange matches a cursor, position or count a client sent that
// names nothing the shim can count to: negative, past the end of what
// there is, or too large to add to. It is answered 400, never wrapped
// around or cut silently.
var ErrOutOfRange = errors.New("shim: out of range")

// RangeError is one such value: which field, what it held, and why.
type RangeError struct {
	Field  string // "after", "checkpoint.scriptPosition", "graceTimeoutMs"
	Value  string
	Reason string
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("shim: %s %s is out of range: %s", e.Field, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrOutOfRange) true.
func (e *RangeError) Is(target error) bool { return target == ErrOutOfRange }
