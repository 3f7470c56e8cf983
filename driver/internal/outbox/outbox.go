// Package outbox owns the ordered, bounded queue every agent driver hands
// its events through: events leave in the order they were made, and only
// the agent's own output waits for room, so a client that prompts or
// answers an approval from its event loop never deadlocks against a full
// queue.
package outbox

import (
	"context"
	"iter"
	"sync"

	"github.com/tetherhq/tether/agent"
)

// Outbox holds a session's events until the reader of Events takes them.
// The driver's reader of the agent's output calls WaitRoom before reading
// more (backpressure); prompts, approvals, resolutions and the end are
// added at once, whatever the queue's length.
type Outbox struct {
	mu     sync.Mutex
	queue  []agent.Event
	closed bool          // no more events will come
	ready  chan struct{} // a signal: events were added or the box closed
	room   chan struct{} // a signal: the queue went below high water, or the box closed
	high   int
}

// New makes an Outbox whose writers wait once high events are queued.
func New(high int) *Outbox {
	return &Outbox{ready: make(chan struct{}, 1), room: make(chan struct{}, 1), high: max(high, 1)}
}

// Add appends events. Callers add under the lock that orders their
// events' making, so the queue's order is the order they were made in.
func (o *Outbox) Add(events ...agent.Event) {
	if len(events) == 0 {
		return
	}
	o.mu.Lock()
	o.queue = append(o.queue, events...)
	o.mu.Unlock()
	signal(o.ready)
}

// WaitRoom waits until the queue is below high water or the box is
// closed; it returns ctx's error if ctx ends first.
func (o *Outbox) WaitRoom(ctx context.Context) error {
	_, err := o.WaitRoomOr(ctx, nil)
	return err
}

// WaitRoomOr is WaitRoom that also gives up when wake fires (woken true):
// for a writer that must read on past high water at times, such as one
// whose agent's answer to a control call comes behind its events.
func (o *Outbox) WaitRoomOr(ctx context.Context, wake <-chan struct{}) (woken bool, err error) {
	for {
		o.mu.Lock()
		full := len(o.queue) >= o.high && !o.closed
		o.mu.Unlock()
		if !full {
			return false, nil
		}
		select {
		case <-o.room:
		case <-wake:
			return true, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// Close says no event follows those queued; writers waiting for room go
// on.
func (o *Outbox) Close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	signal(o.ready)
	signal(o.room)
}

// Take returns the next event; ok is false once the box is closed and
// empty.
func (o *Outbox) Take(ctx context.Context) (e agent.Event, ok bool, err error) {
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

// Events yields every event until the box is closed and empty, or ctx's
// error. It takes what is queued in one go, so a busy stream costs one
// lock and one wake-up per batch, not per event.
func (o *Outbox) Events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		var batch []agent.Event
		for {
			e, ok, err := o.Take(ctx)
			if err != nil {
				yield(agent.Event{}, err)
				return
			}
			if !ok {
				return
			}
			batch = o.takeRest(append(batch[:0], e))
			for i := range batch {
				if !yield(batch[i], nil) {
					return
				}
				batch[i] = agent.Event{}
			}
		}
	}
}

// Batches yields what Events yields, in the batches it takes them in: a
// reader that logs events writes each batch at once. A batch is the
// reader's until it asks for the next.
func (o *Outbox) Batches(ctx context.Context) iter.Seq2[[]agent.Event, error] {
	return func(yield func([]agent.Event, error) bool) {
		var batch []agent.Event
		for {
			e, ok, err := o.Take(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			if !ok {
				return
			}
			batch = o.takeRest(append(batch[:0], e))
			if !yield(batch, nil) {
				return
			}
			clear(batch)
		}
	}
}

// takeRest appends every queued event to batch and empties the queue.
func (o *Outbox) takeRest(batch []agent.Event) []agent.Event {
	o.mu.Lock()
	batch = append(batch, o.queue...)
	clear(o.queue)
	o.queue = o.queue[:0]
	o.mu.Unlock()
	signal(o.room)
	return batch
}

// Queued is a copy of the events not yet taken (for tests that drive a
// session without a reader).
func (o *Outbox) Queued() []agent.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]agent.Event(nil), o.queue...)
}

// signal wakes one waiter of ch without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
