package claude

import (
	"context"
	"sync"
)

// Limits of the message queue between the stdout reader and the consumer.
// Past them the reader stops reading, the pipe fills, and the CLI blocks:
// a slow consumer slows the CLI instead of growing memory.
//
// stdout is one ordered stream, so a control response can only be seen by
// reading past the messages before it. While a control request waits for
// its answer the queue therefore accepts more than its limits (see
// holdOpen): a control call made from inside a receive loop gets its
// answer instead of deadlocking, and the excess is bounded by the
// request's timeout.
const (
	queueMaxItems = 256
	queueMaxBytes = 4 << 20
)

// queued is a decoded message with the size of its line (what the queue's
// byte limit counts), or the error that ends the stream.
type queued struct {
	msg  Message
	size int
	err  error
}

// messageQueue is a bounded FIFO with context-aware waits.
type messageQueue struct {
	mu     sync.Mutex
	items  []queued
	head   int
	bytes  int
	closed bool
	open   int           // control requests waiting: limits suspended
	ready  chan struct{} // signalled when an item arrives or the queue closes
	space  chan struct{} // signalled when an item leaves
}

func newMessageQueue() *messageQueue {
	return &messageQueue{ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func size(q queued) int { return q.size }

// push waits for room; an empty queue always takes one item, however big.
func (q *messageQueue) push(ctx context.Context, it queued) error {
	for {
		q.mu.Lock()
		n := len(q.items) - q.head
		if n == 0 || q.open > 0 || (n < queueMaxItems && q.bytes < queueMaxBytes) {
			q.items = append(q.items, it)
			q.bytes += size(it)
			q.mu.Unlock()
			signal(q.ready)
			return nil
		}
		q.mu.Unlock()
		select {
		case <-q.space:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// pop returns the next item; ok is false once the queue is closed and empty.
func (q *messageQueue) pop(ctx context.Context) (queued, bool, error) {
	for {
		q.mu.Lock()
		if q.head < len(q.items) {
			it := q.items[q.head]
			q.items[q.head] = queued{}
			q.head++
			if q.head == len(q.items) {
				q.items, q.head = q.items[:0], 0
			}
			q.bytes -= size(it)
			// Wake a blocked reader only once the queue is half empty, so
			// that it queues a run of lines per wake-up instead of one.
			roomy := len(q.items)-q.head <= queueMaxItems/2 && q.bytes <= queueMaxBytes/2
			q.mu.Unlock()
			if roomy {
				signal(q.space)
			}
			return it, true, nil
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return queued{}, false, nil
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return queued{}, false, ctx.Err()
		}
	}
}

// holdOpen suspends the limits until the returned func is called.
func (q *messageQueue) holdOpen() (release func()) {
	q.mu.Lock()
	q.open++
	q.mu.Unlock()
	signal(q.space)
	return func() {
		q.mu.Lock()
		q.open--
		q.mu.Unlock()
	}
}

func (q *messageQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	signal(q.ready)
}
