package eventlog

import (
	"errors"
	"fmt"
	"strings"

	berrors "go.etcd.io/bbolt/errors"

	"github.com/tetherhq/tether/runner/eventlog/boltfile"
)

// Errors returned by the package. They are always wrapped with context
// (session, positions, the underlying cause); match them with errors.Is.
var (
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("eventlog: log is closed")

	// ErrTruncated is returned by Read when events after the reader's
	// position were dropped by retention: the reader lost events and must
	// resynchronise (for example from First()-1).
	ErrTruncated = errors.New("eventlog: events dropped by retention")

	// ErrAhead is returned by Read when the reader's position is past the
	// last event of the session: it saw events this log does not have
	// (the session was deleted, or they were lost with an unsynced crash;
	// see Skip). Skip returns it for a gap no crash explains.
	ErrAhead = errors.New("eventlog: position is past the last event")

	// ErrUnknownSession is returned for a session the log does not know.
	ErrUnknownSession = errors.New("eventlog: unknown session")

	// ErrInvalidSession is returned for an empty or too long session name.
	ErrInvalidSession = errors.New("eventlog: invalid session name")

	// ErrTooLarge is returned by Append for a payload over MaxPayloadLen.
	ErrTooLarge = errors.New("eventlog: payload too large")

	// ErrLocked is returned by Open when another Log (in this process or
	// another one) holds the file and the lock timeout expired.
	ErrLocked = errors.New("eventlog: file is locked by another log")

	// ErrCorrupt is returned when the file is not an event log or is
	// damaged: by Open (a *DamagedError), and by Read for an event it
	// cannot decode.
	ErrCorrupt = errors.New("eventlog: file is corrupt or not an event log")

	// ErrDamaged matches the *DamagedError of Open.
	ErrDamaged = boltfile.ErrDamaged
)

// errUnknownFormat is a file of a format this version does not read (a
// newer version's).
var errUnknownFormat = errors.New("unknown format")

// DamagedError is the error of Open for a file it cannot use: which file,
// what is wrong and, once the caller sets Remedy, what to do. Salvage
// saves what can be read of such a file.
type DamagedError = boltfile.DamagedError

// damaged is the *DamagedError of a load that failed with err (an
// ErrCorrupt): its reason is err's text without the sentinel's, which the
// error matches still.
func damaged(path string, err error) error {
	reason := strings.Replace(err.Error(), ErrCorrupt.Error()+": ", "", 1)
	return &DamagedError{Path: path, Reason: reason, Err: ErrCorrupt}
}

// boltErr translates bbolt errors that have a meaning in this package's
// vocabulary and wraps the rest with what was being done.
func boltErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return fmt.Errorf("%s: %w", op, ErrClosed)
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%s: %w (%w)", op, ErrLocked, err)
	case errors.Is(err, berrors.ErrInvalid),
		errors.Is(err, berrors.ErrVersionMismatch),
		errors.Is(err, berrors.ErrChecksum):
		return fmt.Errorf("%s: %w (%w)", op, ErrCorrupt, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func truncated(session string, after, first uint64) error {
	return fmt.Errorf("%w: session %q: reader is at %d but the oldest retained event is %d",
		ErrTruncated, session, after, first)
}
