package runview

import (
	"context"
	"sync"
	"time"
)

// shownWait bounds how long a question waits for its tool call's line.
const shownWait = 300 * time.Millisecond

// shownTools lets an approval question wait until the line of its tool
// call is on the screen. The CLI asks on the control channel, which the SDK
// serves at once, while the message announcing the call waits in the
// message queue: without this the question could come first and the tool
// line be held back until after the answer.
type shownTools struct {
	mu    sync.Mutex
	marks map[string]*shownMark
}

type shownMark struct {
	ch     chan struct{}
	closed bool
}

func newShownTools() *shownTools { return &shownTools{marks: map[string]*shownMark{}} }

func (s *shownTools) mark(id string) *shownMark {
	m, ok := s.marks[id]
	if !ok {
		m = &shownMark{ch: make(chan struct{})}
		s.marks[id] = m
	}
	return m
}

// shown records that the tool call's line was written. A nil receiver
// (raw output, which has no tool lines) does nothing.
func (s *shownTools) shown(id string) {
	if s == nil || id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.mark(id); !m.closed {
		m.closed = true
		close(m.ch)
	}
}

// wait returns once the tool call's line was written, after shownWait, or
// when ctx ends, whichever is first.
func (s *shownTools) wait(ctx context.Context, id string) {
	if s == nil || id == "" {
		return
	}
	s.mu.Lock()
	ch := s.mark(id).ch
	s.mu.Unlock()
	t := time.NewTimer(shownWait)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}
