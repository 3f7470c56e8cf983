package opencode

import (
	"context"
	"iter"
	"sync"

	"github.com/tetherhq/tether/agent"
)

// outbox holds a session's events in the order they were made until the
// reader of Events takes them. Only the event stream's reader waits for room
// (backpressure on the agent's output); prompts, approvals and the end
// are appended at once, so a client that answers an approval or prompts
// from its event loop can never deadlock against a full queue.
type outbox struct {
	mu     sync.Mutex
	queue  []agent.Event
	closed bool          // no more events will come
	ready  chan struct{} // a signal: events were added or the box closed
	room   chan struct{} // a signal: the queue went below high water
	high   int
}

func newOutbox(high int) *outbox {
	return &outbox{ready: make(chan struct{}, 1), room: make(chan struct{}, 1), high: high}
}

// add appends events; call it with the session's lock held, so that the
// order of the queue is the order the events were made in.
func (o *outbox) add(events ...agent.Event) {
	if len(events) == 0 {
		return
	}
	o.mu.Lock()
	o.queue = append(o.queue, events...)
	o.mu.Unlock()
	signal(o.ready)
}

// waitRoom waits until the queue is below high water, or ctx ends.
func (o *outbox) waitRoom(ctx context.Context) bool {
	for {
		o.mu.Lock()
		full := len(o.queue) >= o.high
		o.mu.Unlock()
		if !full {
			return true
		}
		select {
		case <-o.room:
		case <-ctx.Done():
			return false
		}
	}
}

// close says no event will follow those queued.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	signal(o.ready)
}

// take returns the next event; ok is false once the box is closed and
// empty.
func (o *outbox) take(ctx context.Context) (e agent.Event, ok bool, err error) {
	for {
		o.mu.Lock()
		if len(o.queue) > 0 {
			e = o.queue[0]
			o.queue[0] = agent.Event{}
			o.queue = o.queue[1:]
			below := len(o.queue) < o.high
			o.mu.Unlock()
			if below {
				signal(o.room)
			}
			return e, true, nil
		}
		closed := o.closed
		o.mu.Unlock()
		if closed {
			signal(o.ready) // for another reader
			return agent.Event{}, false, nil
		}
		select {
		case <-o.ready:
		case <-ctx.Done():
			return agent.Event{}, false, ctx.Err()
		}
	}
}

// events is take as an iterator.
func (o *outbox) events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for {
			e, ok, err := o.take(ctx)
			if err != nil {
				yield(agent.Event{}, err)
				return
			}
			if !ok || !yield(e, nil) {
				return
			}
		}
	}
}

// signal wakes one waiter of ch without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
