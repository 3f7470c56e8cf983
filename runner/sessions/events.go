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

// Messages is the conversation so far as completed items, read from the
// log, so an ended session still answers.
func (m *Manager) Messages(ctx context.Context, id string) ([]agent.Item, error) {
	if _, err := m.get(id); err != nil {
		return nil, err
	}
	var items []agent.Item
	for ev, err := range m.cfg.Log.Read(ctx, id, 0) {
		if err != nil {
			return nil, fmt.Errorf("sessions: read %s: %w", id, err)
		}
		var e agent.Event
		if err := json.Unmarshal(ev.Payload, &e); err != nil {
			return nil, fmt.Errorf("sessions: event %d of %s: %w", ev.Seq, id, err)
		}
		if e.Kind == agent.KindItemCompleted {
			items = append(items, *e.Item)
		}
	}
	return items, nil
}

// Diff is what the session changed in its workspace, as its agent
// reports it (*agent.UnsupportedError where it cannot).
func (m *Manager) Diff(ctx context.Context, id string) ([]agent.FileChange, error) {
	s, err := m.get(id)
	if err != nil {
		return nil, err
	}
	return s.agent.Diff(ctx)
}
