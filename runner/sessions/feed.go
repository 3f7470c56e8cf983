package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/eventlog"
)

// FeedName is the event log's name for the runner-wide feed: every
// session's events, each once more, numbered in the order they were
// logged. Session ids never take this form.
const FeedName = "runner-feed"

// FeedEvent is one event of the runner-wide feed: Pos is its place in the
// feed (what a client resumes from); the event keeps its session and seq.
type FeedEvent struct {
	Pos   uint64      `json:"pos"`
	Event agent.Event `json:"event"`
}

// feed wakes the readers of the runner-wide feed, and keeps its newest
// events in memory, so a reader that keeps up is handed them without
// reading them back from the log.
type feed struct {
	// appending orders appends: positions are handed out in the order
	// events join recent.
	appending sync.Mutex
	mu        sync.Mutex
	appended  chan struct{}
	recent    []FeedEvent // the newest, in position order, without gaps
}

func newFeed() *feed { return &feed{appended: make(chan struct{})} }

func (f *feed) append(ctx context.Context, log *eventlog.Log, e *agent.Event) error {
	payload, err := e.AppendJSON(nil)
	if err != nil {
		return err
	}
	f.appending.Lock()
	defer f.appending.Unlock()
	pos, err := log.Append(ctx, FeedName, payload)
	if err != nil {
		return fmt.Errorf("sessions: feed: %w", err)
	}
	f.mu.Lock()
	f.keep(FeedEvent{Pos: pos, Event: *e})
	close(f.appended)
	f.appended = make(chan struct{})
	f.mu.Unlock()
	return nil
}

func (f *feed) woken() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appended
}

// Feed yields every session's events, in the order they were logged, from
// feed position `after` on, then live until ctx ends. A reader that comes
// back with the last Pos it saw misses nothing and sees nothing twice
// (while the feed still holds it: the log's retention applies).
func (m *Manager) Feed(ctx context.Context, after uint64) iter.Seq2[FeedEvent, error] {
	return func(yield func(FeedEvent, error) bool) {
		for {
			woken := m.feed.woken()
			var more bool
			if after, more = m.feedAfter(ctx, after, yield); !more {
				return
			}
			select {
			case <-woken:
			case <-ctx.Done():
				yield(FeedEvent{}, ctx.Err())
				return
			}
		}
	}
}

// feedAfter yields what the feed holds after position after: from memory
// while it still holds that far back, else from the log. It returns the
// last position yielded, and false once the reader is done or failed.
func (m *Manager) feedAfter(ctx context.Context, after uint64, yield func(FeedEvent, error) bool) (uint64, bool) {
	if recent, ok := m.feed.since(after); ok {
		for _, fe := range recent {
			after = fe.Pos
			if !yield(fe, nil) {
				return after, false
			}
		}
		return after, true
	}
	for ev, err := range m.cfg.Log.Read(ctx, FeedName, after) {
		if err != nil {
			yield(FeedEvent{}, fmt.Errorf("sessions: feed after %d: %w", after, err))
			return after, false
		}
		var e agent.Event
		if err := json.Unmarshal(ev.Payload, &e); err != nil {
			yield(FeedEvent{}, fmt.Errorf("sessions: feed event %d: %w", ev.Seq, err))
			return after, false
		}
		after = ev.Seq
		if !yield(FeedEvent{Pos: ev.Seq, Event: e}, nil) {
			return after, false
		}
	}
	return after, true
}
