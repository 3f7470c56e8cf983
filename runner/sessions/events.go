package sessions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/tetherhq/tether/agent"
)

// Events yields the session's events with seq > after: first what the log
// holds, then live as they are logged, until the session has ended and
// its last event was yielded. Every event comes once, in seq order, with
// its Seq set, whether the reader is early, late or reconnecting. Live
// events come from memory; a reader that falls far behind catches up from
// the log.
func (m *Manager) Events(ctx context.Context, id string, after uint64) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		s, err := m.get(id)
		if err != nil {
			yield(agent.Event{}, err)
			return
		}
		for {
			// Subscribed before reading the log: what is logged meanwhile
			// is in both, and the seq tells which to skip.
			sub := s.subscribe()
			var ok bool
			if after, ok = m.replay(ctx, id, after, yield); !ok {
				s.unsubscribe(sub)
				return
			}
			if !m.live(ctx, s, sub, &after, yield) {
				return
			}
			if !s.lagged(sub) {
				// Ended; the log has everything the channel may have
				// missed before the subscription.
				m.replay(ctx, id, after, yield)
				return
			}
		}
	}
}

// live yields what the subscription brings until its channel closes
// (true: the caller looks at why) or the reader stops (false).
func (m *Manager) live(ctx context.Context, s *session, sub *subscriber, after *uint64, yield func(agent.Event, error) bool) bool {
	for {
		select {
		case e, open := <-sub.ch:
			if !open {
				return true
			}
			if uint64(e.Seq) <= *after {
				continue
			}
			*after = uint64(e.Seq)
			if !yield(*e, nil) {
				s.unsubscribe(sub)
				return false
			}
		case <-ctx.Done():
			s.unsubscribe(sub)
			yield(agent.Event{}, ctx.Err())
			return false
		}
	}
}

// replay yields the logged events after `after`; it returns the last seq
// yielded and whether to go on.
func (m *Manager) replay(ctx context.Context, id string, after uint64, yield func(agent.Event, error) bool) (uint64, bool) {
	for ev, err := range m.cfg.Log.Read(ctx, id, after) {
		if err != nil {
			yield(agent.Event{}, fmt.Errorf("sessions: read %s after %d: %w", id, after, err))
			return after, false
		}
		e, err := agent.DecodeLogged(ev.Payload)
		if err != nil {
			yield(agent.Event{}, fmt.Errorf("sessions: event %d of %s: %w", ev.Seq, id, err))
			return after, false
		}
		e.Seq, e.Logged, after = int64(ev.Seq), ev.Payload, ev.Seq
		if !yield(e, nil) {
			return after, false
		}
	}
	return after, true
}

// Messages is the conversation so far as completed items: as the agent
// keeps it while the session runs (a resumed conversation's past
// included), else as the session's log has it, so an ended session still
// answers.
func (m *Manager) Messages(ctx context.Context, id string) ([]agent.Item, error) {
	s, err := m.get(id)
	if err != nil {
		return nil, err
	}
	items, err := s.agent.Messages(ctx)
	if err == nil {
		return items, nil
	}
	// The log has what the agent did not keep (HostKeepsHistory); the
	// agent, what came before the session: the first PastItems of what
	// it reports (a session reopened after a restart reports its own
	// earlier turns too, which the log has).
	var elsewhere *agent.HistoryElsewhereError
	errors.As(err, &elsewhere)
	logged, err := m.loggedItems(ctx, id)
	if err != nil || elsewhere == nil {
		return logged, err
	}
	s.mu.Lock()
	n := min(s.rec.PastItems, len(elsewhere.Past))
	s.mu.Unlock()
	return append(slices.Clip(elsewhere.Past[:n]), logged...), nil
}

// loggedItems are the items the session's log has completed.
func (m *Manager) loggedItems(ctx context.Context, id string) ([]agent.Item, error) {
	var items []agent.Item
	for ev, err := range m.cfg.Log.Read(ctx, id, 0) {
		if err != nil {
			return nil, fmt.Errorf("sessions: read %s: %w", id, err)
		}
		e, err := agent.DecodeLogged(ev.Payload)
		if err != nil {
			return nil, fmt.Errorf("sessions: event %d of %s: %w", ev.Seq, id, err)
		}
		if e.Kind == agent.KindItemCompleted {
			items = append(items, *e.Item)
		}
	}
	return items, nil
}

// Diff is what the session changed in its workspace: while it runs, every
// file added, modified or deleted since it began, from the workspace's
// own snapshots, whichever agent (or tool command) changed it; once it has
// ended, what its agent reports (*agent.UnsupportedError where it cannot),
// or, for a session of an earlier run, the file changes in its log.
func (m *Manager) Diff(ctx context.Context, id string) ([]agent.FileChange, error) {
	s, err := m.get(id)
	if err != nil {
		return nil, err
	}
	if changes, ok, err := s.diff(ctx); ok {
		return changes, err
	}
	changes, err := s.agent.Diff(ctx)
	if !errors.Is(err, agent.ErrSessionEnded) {
		return changes, err
	}
	items, err := m.loggedItems(ctx, id)
	if err != nil {
		return nil, err
	}
	changes = []agent.FileChange{}
	for _, it := range items {
		if it.Type == agent.ItemFileChange && it.Status == agent.ItemDone {
			changes = append(changes, it.Changes...)
		}
	}
	return changes, nil
}

// EventGroups is Events in groups, for a reader that writes what is ready
// at once (a replay from the log, a burst of live events) in one go: each
// group holds at most max events, in seq order, and is the reader's only
// until it asks for the next.
func (m *Manager) EventGroups(ctx context.Context, id string, after uint64, max int) iter.Seq2[[]agent.Event, error] {
	max = cmp.Or(max, 1)
	return func(yield func([]agent.Event, error) bool) {
		var group []agent.Event // grows with the bursts it takes: an idle reader holds none
		flush := func() bool {
			if len(group) == 0 {
				return true
			}
			ok := yield(group, nil)
			clear(group)
			group = group[:0]
			return ok
		}
		fail := func(err error) { yield(nil, err) }
		s, err := m.get(id)
		if err != nil {
			fail(err)
			return
		}
		collect := func(e agent.Event, err error) bool {
			if err != nil {
				flush()
				fail(err)
				return false
			}
			group = append(group, e)
			return len(group) < max || flush()
		}
		for {
			sub := s.subscribe()
			var ok bool
			if after, ok = m.replay(ctx, id, after, collect); !ok {
				s.unsubscribe(sub)
				return
			}
			if !flush() {
				s.unsubscribe(sub)
				return
			}
			if !m.liveGroups(ctx, s, sub, &after, max, &group, flush, fail) {
				return
			}
			if !s.lagged(sub) {
				m.replay(ctx, id, after, collect)
				flush()
				return
			}
		}
	}
}

// liveGroups is live for EventGroups: after each event it waits for, it
// takes what else the subscription already holds, up to max.
func (m *Manager) liveGroups(ctx context.Context, s *session, sub *subscriber, after *uint64, max int,
	group *[]agent.Event, flush func() bool, fail func(error)) bool {
	take := func(e *agent.Event) {
		if uint64(e.Seq) > *after {
			*after = uint64(e.Seq)
			*group = append(*group, *e)
		}
	}
	for {
		select {
		case e, open := <-sub.ch:
			if !open {
				return flush()
			}
			take(e)
		more:
			for len(*group) < max {
				select {
				case e, open := <-sub.ch:
					if !open {
						return flush()
					}
					take(e)
				default:
					break more
				}
			}
			if !flush() {
				s.unsubscribe(sub)
				return false
			}
		case <-ctx.Done():
			s.unsubscribe(sub)
			flush()
			fail(ctx.Err())
			return false
		}
	}
}
