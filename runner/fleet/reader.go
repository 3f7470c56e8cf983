package fleet

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/agent"
)

// ErrOutOfOrder: a session's events in the stream are further out of
// order than a reader can put right (reorderRoom).
var ErrOutOfOrder = errors.New("fleet: a session's events are out of order in the stream")

// reorderRoom is how many events a reader holds while it waits for one
// that a retried publish put later in the stream.
const reorderRoom = 4096

// streamEvents yields session's events after seq `after` as the stream
// holds them, then live ones, until its session.ended or ctx ends: each
// seq once, in order, whatever a retried publish did to the stream's
// order.
func (f *Fleet) streamEvents(ctx context.Context, session string, after uint64) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if f.endedBy(ctx, session, after) {
			return
		}
		cons, err := f.orderedConsumer(ctx, session)
		if err != nil {
			yield(agent.Event{}, fmt.Errorf("fleet: reading session %s: %w", session, err))
			return
		}
		msgs, err := cons.Messages()
		if err != nil {
			yield(agent.Event{}, fmt.Errorf("fleet: reading session %s: %w", session, err))
			return
		}
		stop := context.AfterFunc(ctx, msgs.Stop)
		defer stop()
		defer msgs.Stop()
		next := after + 1
		held := map[uint64]agent.Event{}
		for {
			m, err := msgs.Next()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				yield(agent.Event{}, fmt.Errorf("fleet: reading session %s: %w", session, err))
				return
			}
			seq, err := strconv.ParseUint(m.Headers().Get(seqHeader), 10, 64)
			if err != nil || seq < next {
				continue // a duplicate, or not an event
			}
			e, err := agent.DecodeLogged(m.Data())
			if err != nil {
				yield(agent.Event{}, fmt.Errorf("fleet: event %d of session %s: %w", seq, session, err))
				return
			}
			e.Seq = int64(seq)
			held[seq] = e
			if len(held) > reorderRoom {
				yield(agent.Event{}, fmt.Errorf("%w: session %s waits for %d", ErrOutOfOrder, session, next))
				return
			}
			for {
				e, ok := held[next]
				if !ok {
					break
				}
				delete(held, next)
				next++
				if !yield(e, nil) || e.Kind == agent.KindSessionEnded {
					return
				}
			}
		}
	}
}

// orderedConsumer makes the consumer a reader reads session with, trying
// again while the stream has no leader (a node just died), until ctx
// ends.
func (f *Fleet) orderedConsumer(ctx context.Context, session string) (jetstream.Consumer, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		cons, err := f.js.OrderedConsumer(actx, eventStream, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{eventSubject(session)}, DeliverPolicy: jetstream.DeliverAllPolicy})
		cancel()
		if err == nil {
			return cons, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// endedBy says whether session's last event in the stream is its end and
// a reader after seq `after` has seen it: there is nothing to wait for.
// Not knowing (no answer in time) is "no".
func (f *Fleet) endedBy(ctx context.Context, session string, after uint64) bool {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	m, err := f.events.GetLastMsgForSubject(ctx, eventSubject(session))
	if err != nil {
		return false
	}
	seq, err := strconv.ParseUint(m.Header.Get(seqHeader), 10, 64)
	if err != nil || seq > after {
		return false
	}
	e, err := agent.DecodeLogged(m.Data)
	return err == nil && e.Kind == agent.KindSessionEnded
}
