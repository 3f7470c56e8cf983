package claudecli

import (
	"context"
	"sync"
)

// Bounds of the lines read from a relay CLI and not yet taken by the
// runner: past them the reader waits, so a slow host slows the CLI rather
// than growing this queue. A single line larger than the budget still
// passes, alone.
const (
	outQueueBytes = 1 << 20
	outItemCharge = 64 // per line, on top of its bytes
)

// keepItems is the most lines an empty queue keeps room for.
const keepItems = 32

// outQueue carries the CLI's output from the reader to Next. Unlike a
// channel it is bounded in bytes and hands over every line already read at
// once, so the runner logs a burst of output in one append.
type outQueue struct {
	mu    sync.Mutex
	items []relayOut
	bytes int

	more chan struct{} // capacity 1: something was put
	room chan struct{} // capacity 1: something was taken
}

func newOutQueue() *outQueue {
	return &outQueue{more: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// put adds one output, waiting for room until ctx ends.
func (q *outQueue) put(ctx context.Context, o relayOut) error {
	charge := len(o.line) + outItemCharge
	q.mu.Lock()
	for len(q.items) > 0 && q.bytes+charge > outQueueBytes {
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-ctx.Done():
			return ctx.Err()
		}
		q.mu.Lock()
	}
	q.items = append(q.items, o)
	q.bytes += charge
	q.mu.Unlock()
	signal(q.more)
	return nil
}

// take moves up to max outputs to dst, stopping before an error unless it
// comes first (then it is the only one taken). ok is false when the queue
// is empty: wait on q.more.
func (q *outQueue) take(dst []relayOut, max int) (out []relayOut, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return dst, false
	}
	n := 0
	for n < len(q.items) && n < max {
		if q.items[n].err != nil {
			if n == 0 {
				n = 1
			}
			break
		}
		n++
	}
	for _, o := range q.items[:n] {
		q.bytes -= len(o.line) + outItemCharge
	}
	dst = append(dst, q.items[:n]...)
	// Shift rather than reslice, so the array does not creep forward and
	// keep taken lines alive.
	rest := copy(q.items, q.items[n:])
	clear(q.items[rest:])
	q.items = q.items[:rest]
	if rest == 0 && n < keepItems/4 && cap(q.items) > keepItems {
		q.items = nil // quiet again after a burst: an idle agent keeps no room
	}
	signal(q.room)
	return dst, true
}

// signal makes a non-blocking send on a channel of capacity 1.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
