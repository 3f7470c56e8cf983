package fleet

import (
	"context"
	"sync"
)

// settled tells waiters that a worker has nothing left to do: the
// publisher's events all acked, the outbox's writes all made. Its methods
// run under the worker's own mutex.
type settled struct{ ch chan struct{} }

// broadcast wakes the waiters to look again. Under the worker's mutex.
func (s *settled) broadcast() {
	if s.ch != nil {
		close(s.ch)
	}
	s.ch = make(chan struct{})
}

// wait waits until done, looked at under mu, says so, or ctx ends.
func (s *settled) wait(ctx context.Context, mu *sync.Mutex, done func() bool) error {
	for {
		mu.Lock()
		if s.ch == nil {
			s.ch = make(chan struct{})
		}
		ok, ch := done(), s.ch
		mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
