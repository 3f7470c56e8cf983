// Package safe owns what keeps one request's failure from ending the
// process: a goroutine a request starts recovers its own panic, logs it
// with its stack, and ends that request (or session) with an error, while
// every other session goes on. net/http does this for the handler's own
// goroutine only.
package safe

import (
	"fmt"
	"log/slog"
	"runtime/debug"
)

// PanicError is a panic recovered in a goroutine: its value and where it
// happened.
type PanicError struct {
	// Where names the goroutine ("sessions API stream", say).
	Where string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("%s: internal error: panic: %v", e.Where, e.Value)
}

// Unwrap lets errors.Is/As see an error the goroutine panicked with.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Recover, deferred first thing in a goroutine (defer safe.Recover(…)),
// stops a panic there: it logs it with its stack and hands onPanic (if not
// nil) the *PanicError, to end what the goroutine served.
func Recover(log *slog.Logger, where string, onPanic func(*PanicError)) {
	v := recover()
	if v == nil {
		return
	}
	err := &PanicError{Where: where, Value: v, Stack: debug.Stack()}
	if log != nil {
		log.Error("recovered from a panic", "where", where, "panic", fmt.Sprint(v), "stack", string(err.Stack))
	}
	if onPanic != nil {
		onPanic(err)
	}
}

// Go runs fn on a goroutine of its own that recovers a panic as Recover
// does.
func Go(log *slog.Logger, where string, onPanic func(*PanicError), fn func()) {
	go func() {
		defer Recover(log, where, onPanic)
		fn()
	}()
}
