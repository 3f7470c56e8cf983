package fleet

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

// The fleet's runner-wide feed (GET /v1/events on any runner) is every
// session's events in the order the stream stored them. A position names
// one event of the fleet, the same on every runner: its message's stream
// position, shifted left by feedIndexBits, plus its index in the message
// (a batch holds at most maxBatchEvents). A client may resume the feed on
// any runner from the last position it got on another.
const feedIndexBits = 10

// A batch's last index fits a feed position (a compile error otherwise).
const _ uint = 1<<feedIndexBits - maxBatchEvents

// feedInactive is how long the stream keeps a feed reader's consumer
// after the reader has stopped asking.
const feedInactive = 30 * time.Second

func feedPos(streamPos uint64, index int) uint64 { return streamPos<<feedIndexBits | uint64(index) }

// ErrFeedPosition: a feed position beyond what the stream can number.
var ErrFeedPosition = errors.New("fleet: feed position out of range")

// Feed yields every session's events of the fleet after feed position
// `after`, as the stream holds them, then live until ctx ends: each event
// once, each session's in seq order. Every writer of a session's events
// expects the stream position of its last message, so the stream holds
// them in that order; a seq a session has had already is dropped. Like a
// session's reader, it never yields an event the stream has not stored.
func (c *Core) Feed(ctx context.Context, after uint64) iter.Seq2[sessions.FeedEvent, error] {
	return c.f.feed(ctx, after)
}

// FeedStart is the position of the oldest event the stream holds (0: it
// holds none).
func (c *Core) FeedStart() (uint64, error) {
	ctx, cancel := context.WithTimeout(c.ctx, attemptTimeout)
	defer cancel()
	return c.f.feedStart(ctx)
}

// FeedEnd is the position of the newest event the stream holds (0: it
// holds none).
func (c *Core) FeedEnd() (uint64, error) {
	ctx, cancel := context.WithTimeout(c.ctx, attemptTimeout)
	defer cancel()
	return c.f.feedEnd(ctx)
}

func (f *Fleet) feedStart(ctx context.Context) (uint64, error) {
	st, err := f.streamState(ctx)
	if err != nil || st.Msgs == 0 {
		return 0, err
	}
	return feedPos(st.FirstSeq, 0), nil
}

func (f *Fleet) feedEnd(ctx context.Context) (uint64, error) {
	st, err := f.streamState(ctx)
	if err != nil || st.Msgs == 0 {
		return 0, err
	}
	m, err := f.leaderGet(ctx, map[string]any{"seq": st.LastSeq})
	if err != nil {
		return 0, fmt.Errorf("fleet: the feed's end: %w", err)
	}
	events, err := splitBatch(m.header, m.data)
	if err != nil {
		return 0, fmt.Errorf("fleet: the feed's end: %w", err)
	}
	return feedPos(m.pos, max(len(events)-1, 0)), nil // a message that is no event ends the feed too
}

func (f *Fleet) streamState(ctx context.Context) (jetstream.StreamState, error) {
	info, err := f.events.Info(ctx)
	if err != nil {
		return jetstream.StreamState{}, fmt.Errorf("fleet: the stream's state: %w", err)
	}
	return info.State, nil
}

func (f *Fleet) feed(ctx context.Context, after uint64) iter.Seq2[sessions.FeedEvent, error] {
	return func(yield func(sessions.FeedEvent, error) bool) {
		if after>>(64-feedIndexBits) != 0 {
			yield(sessions.FeedEvent{}, fmt.Errorf("%w: %d", ErrFeedPosition, after))
			return
		}
		// The server drops the consumer once its reader has gone quiet
		// this long (a live reader always has a pull waiting): a client
		// that comes and goes leaves nothing behind for minutes.
		cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{eventSubjects}, InactiveThreshold: feedInactive}
		if start := after >> feedIndexBits; start > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
		}
		cons, err := f.js.OrderedConsumer(ctx, eventStream, cfg)
		if err != nil {
			yield(sessions.FeedEvent{}, fmt.Errorf("fleet: reading the feed: %w", err))
			return
		}
		msgs, err := cons.Messages()
		if err != nil {
			yield(sessions.FeedEvent{}, fmt.Errorf("fleet: reading the feed: %w", err))
			return
		}
		defer msgs.Stop()
		last := map[string]uint64{} // each session's last seq yielded
		for {
			m, err := msgs.Next(jetstream.NextContext(ctx))
			if err != nil {
				if ctx.Err() != nil {
					err = ctx.Err()
				}
				yield(sessions.FeedEvent{}, fmt.Errorf("fleet: reading the feed: %w", err))
				return
			}
			if !feedMessage(m, after, last, yield) {
				return
			}
		}
	}
}

// feedMessage yields the events of one stream message past `after` that
// their sessions have not had yet; false says the reader is done.
func feedMessage(m jetstream.Msg, after uint64, last map[string]uint64, yield func(sessions.FeedEvent, error) bool) bool {
	meta, err := m.Metadata()
	if err != nil {
		return yield(sessions.FeedEvent{}, fmt.Errorf("fleet: a feed message: %w", err))
	}
	events, err := splitBatch(m.Headers(), m.Data())
	if err != nil {
		return yield(sessions.FeedEvent{}, fmt.Errorf("fleet: feed message %d: %w", meta.Sequence.Stream, err))
	}
	for i, le := range events {
		pos := feedPos(meta.Sequence.Stream, i)
		e, err := agent.DecodeLogged(le.payload)
		if err != nil {
			return yield(sessions.FeedEvent{}, fmt.Errorf("fleet: feed event %d: %w", pos, err))
		}
		if pos <= after || le.seq <= last[e.SessionID] {
			continue
		}
		last[e.SessionID] = le.seq
		e.Seq, e.Logged = int64(le.seq), le.payload
		if !yield(sessions.FeedEvent{Pos: pos, Event: e}, nil) {
			return false
		}
	}
	return true
}
