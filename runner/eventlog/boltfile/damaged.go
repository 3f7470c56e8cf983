// Package boltfile reads bbolt files (go.etcd.io/bbolt, the event log's
// and the approvals' storage) without trusting them.
//
// bbolt trusts its file: it maps it into memory and follows every page
// reference it finds, so one overwritten page makes it panic ("page
// expected to be …"), some of them on a goroutine of its own where nothing
// can recover, and a file cut short makes the process die of SIGBUS when
// it reads past the end. Check reads the file the way bbolt will, but
// checks that the file holds each page before it reads it, and says what
// is wrong before bbolt is given the file; OpenChecked does so under
// bbolt's own lock. To salvage what can still be read of a damaged file,
// Open it, then Walk its buckets: pages that cannot be read are passed
// over, and reads that fail (pread) are errors, never faults.
package boltfile

import (
	"errors"
	"fmt"
)

// ErrDamaged matches every *DamagedError.
var ErrDamaged = errors.New("boltfile: file is damaged")

// DamagedError is a file that cannot be used as it is: a file that is not
// a bbolt file, or one whose structure is broken. Its message is one
// sentence naming the file, what is wrong and, when Remedy is set, what to
// do: "PATH is damaged: REASON; REMEDY".
type DamagedError struct {
	Path   string // the file
	Reason string // what is wrong, a clause ("page 9 holds something else")
	// Remedy is what the operator can do, a clause; the program that
	// knows its own recovery command sets it.
	Remedy string
	// Err is a sentinel of the store the file belongs to (eventlog's
	// ErrCorrupt, for one), so that errors.Is finds it too; may be nil.
	Err error
}

func (e *DamagedError) Error() string {
	s := fmt.Sprintf("%s is damaged: %s", e.Path, e.Reason)
	if e.Remedy != "" {
		s += "; " + e.Remedy
	}
	return s
}

// Is reports ErrDamaged.
func (e *DamagedError) Is(target error) bool { return target == ErrDamaged }

// Unwrap returns the store's sentinel.
func (e *DamagedError) Unwrap() error { return e.Err }
