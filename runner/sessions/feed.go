package sessions

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/tetherhq/tether/agent"
)

// FeedEvent is one event of the runner-wide feed: Pos is its place in the
// feed (what a client resumes from); the event keeps its session and seq.
// The feed is the event log's own numbering of every event it holds,
// across sessions, in the order they were logged.
type FeedEvent struct {
	Pos   uint64      `json:"pos"`
	Event agent.Event `json:"event"`
}

// feed wakes the readers of the runner-wide feed, and while it has any,
// keeps its newest events in memory, so a reader that keeps up is handed
// them without reading them back from the log. Without readers it keeps
// none: thousands of events held their agents' lines and items in the
// heap (several MiB under a fast agent, marked at every collection) for
// readers that might never come, and one that comes reads what it missed
// from the log.
type feed struct {
	// appending orders appends: the log gives positions in the order
	// events join recent.
	appending sync.Mutex
	mu        sync.Mutex
	appended  chan struct{}
	readers   int         // Feed iterations under way
	recent    []FeedEvent // the newest, in position order, without gaps
}

func newFeed() *feed { return &feed{appended: make(chan struct{})} }

// logged keeps events, logged at consecutive positions from pos, while
// the feed has readers, and wakes the readers once. Under appending.
func (f *feed) logged(pos uint64, events []agent.Event) {
	f.mu.Lock()
	if f.readers > 0 {
		for i := range events {
			f.keep(FeedEvent{Pos: pos + uint64(i), Event: events[i]})
		}
	}
	close(f.appended)
	f.appended = make(chan struct{})
	f.mu.Unlock()
}

// join counts a reader in; leave counts it out, and the last one out
// drops what the feed kept for them.
func (f *feed) join() {
	f.mu.Lock()
	f.readers++
	f.mu.Unlock()
}

func (f *feed) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readers--; f.readers == 0 {
		f.recent = nil
	}
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
		// Counted before the first read, so that what is logged after
		// the log's answer is kept for it.
		m.feed.join()
		defer m.feed.leave()
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
	for fe, err := range m.cfg.Log.Feed(ctx, after) {
		if err != nil {
			yield(FeedEvent{}, fmt.Errorf("sessions: feed after %d: %w", after, err))
			return after, false
		}
		e, err := agent.DecodeLogged(fe.Payload)
		if err != nil {
			yield(FeedEvent{}, fmt.Errorf("sessions: feed event %d: %w", fe.Pos, err))
			return after, false
		}
		e.Seq, e.Logged, after = int64(fe.Seq), fe.Payload, fe.Pos
		if !yield(FeedEvent{Pos: fe.Pos, Event: e}, nil) {
			return after, false
		}
	}
	return after, true
}
