package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/tetherhq/tether/agent"
)

// Events yields the session's events with seq > after: first what the log
// holds, then live as they are logged, until the session has ended and
// its last event was yielded. Every event comes once, in seq order, with
// its Seq set, whether the reader is early, late or reconnecting.
func (m *Manager) Events(ctx context.Context, id string, after uint64) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		s, err := m.get(id)
		if err != nil {
			yield(agent.Event{}, err)
			return
		}
		for {
			// Take the wake-up channel before reading, so an append
			// between the read and the wait is not missed.
			s.mu.Lock()
			woken, last := s.appended, s.info.LastSeq
			s.mu.Unlock()
			ended := isClosed(s.done)
			for ev, err := range m.cfg.Log.Read(ctx, id, after) {
				if err != nil {
					yield(agent.Event{}, fmt.Errorf("sessions: read %s after %d: %w", id, after, err))
					return
				}
				var e agent.Event
				if err := json.Unmarshal(ev.Payload, &e); err != nil {
					yield(agent.Event{}, fmt.Errorf("sessions: event %d of %s: %w", ev.Seq, id, err))
					return
				}
				e.Seq, after = int64(ev.Seq), ev.Seq
				if !yield(e, nil) {
					return
				}
			}
			if ended && after >= last {
				return
			}
			select {
			case <-woken:
			case <-s.done:
			case <-ctx.Done():
				yield(agent.Event{}, ctx.Err())
				return
			}
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
