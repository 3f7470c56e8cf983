// Package transport owns moving lines between Tether and an agent: a
// Transport connects and yields a Conn that reads and writes whole lines and
// closes. It knows nothing of what the lines mean. Command runs the agent as
// a local child process; Memory connects two ends in process for tests.
package transport

import (
	"context"
	"errors"
	"fmt"
)

// Transport starts or reaches an agent and yields a connection to it.
type Transport interface {
	Connect(ctx context.Context) (Conn, error)
}

// Conn is a line-oriented, two-way connection to one agent.
//
// Read is called from one goroutine at a time; Write may be called
// concurrently and never interleaves lines.
type Conn interface {
	// Read returns the next line, owned by the caller. Errors matching
	// ndjson.ErrSkipped (an overlong or truncated line) are recoverable:
	// call Read again. io.EOF means the agent's output ended cleanly; an
	// *ExitError means the agent ended abnormally.
	Read(ctx context.Context) ([]byte, error)
	// Write sends one line (without newline).
	Write(ctx context.Context, line []byte) error
	// CloseWrite signals end of input to the agent.
	CloseWrite() error
	// Close ends the connection and the agent behind it, and releases
	// everything it holds. It is safe to call more than once.
	Close() error
}

// Exiter is a Conn whose agent process can be watched for its end without
// reading its output (Command's Conn is one): Done is closed once the
// process has ended, and Err then says how (nil for a clean exit, else an
// *ExitError).
type Exiter interface {
	Done() <-chan struct{}
	Err() error
}

// ErrClosed is returned by operations on a closed Conn.
var ErrClosed = errors.New("transport: connection closed")

// ExitError reports an agent process that ended abnormally.
type ExitError struct {
	Code       int    // exit code, or -1 when killed by a signal
	Signal     string // the signal's name when killed by one
	StderrTail string // the last part of what it wrote to stderr
}

func (e *ExitError) Error() string {
	what := fmt.Sprintf("exited with code %d", e.Code)
	if e.Signal != "" {
		what = "was killed by signal " + e.Signal
	}
	if e.StderrTail != "" {
		return fmt.Sprintf("agent process %s; stderr: %s", what, e.StderrTail)
	}
	return "agent process " + what
}

// StartError reports an agent that could not be started.
type StartError struct {
	Path string
	Err  error
}

func (e *StartError) Error() string { return fmt.Sprintf("start %s: %v", e.Path, e.Err) }
func (e *StartError) Unwrap() error { return e.Err }
