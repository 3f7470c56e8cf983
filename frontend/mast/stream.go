package mast

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

// feedState folds the runner-wide feed: a projector per session, and the
// stamp of each event. Stamps are the events' times, made strictly
// increasing in feed order (a microsecond apart at least), so "every event
// after timestamp T" is exactly a tail of the feed, and an orchestrator
// that names the last timestamp it saw gets the rest, no more, no less.
type feedState struct {
	projectors map[string]*projector
	pos        uint64 // the last position folded
	stamp      int64  // its stamp, in Unix microseconds
	// lastStamp is each session's newest stamp.
	lastStamp map[string]int64
	// retired, when set, is told of each message a turn's end retired
	// and the stamp it did at; ended of each session's end.
	retired func(sessionID string, m *message, at int64)
	ended   func(sessionID string, at int64)
}

func newFeedState() *feedState {
	return &feedState{projectors: map[string]*projector{}, lastStamp: map[string]int64{}}
}

// apply folds one feed event in and returns its mast events with their
// stamps: each mast event has its own, so a reader that saw some of one
// canonical event's mast events and not the rest resumes exactly there.
func (st *feedState) apply(fe sessions.FeedEvent) ([]Event, []int64) {
	base := max(fe.Event.Time.UnixMicro(), st.stamp+1)
	id := fe.Event.SessionID
	p, ok := st.projectors[id]
	if !ok {
		p = newProjector(id)
		st.projectors[id] = p
	}
	st.pos = fe.Pos
	done := len(p.done)
	events := p.project(fe.Event, base)
	stamps := make([]int64, len(events))
	for i, e := range events {
		// The canonical seq, so a reader can tell an event it has seen.
		e.Data["seq"] = fe.Event.Seq
		stamps[i] = base + int64(i)
		st.stamp = stamps[i]
		st.lastStamp[id] = stamps[i]
	}
	if st.retired != nil && len(p.done) > done {
		for _, m := range p.done[done:] {
			st.retired(id, m, base)
		}
	}
	if st.ended != nil && p.ended && fe.Event.Kind == agent.KindSessionEnded {
		st.ended(id, st.stamp)
	}
	return events, stamps
}

// response is sync_response as of what was folded: for each session the
// orchestrator caches, and each one with events after since, the
// messages changed after since. unknown are the cached ids the state has
// no session of.
func (st *feedState) response(cached []string, since int64) (resp SyncResponse, unknown []string) {
	ids := slices.Clone(cached)
	for id, last := range st.lastStamp {
		if last > since && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	resp = SyncResponse{Type: "sync_response", Sessions: []SyncSession{}}
	for _, id := range slices.Compact(ids) {
		p, ok := st.projectors[id]
		if !ok {
			unknown = append(unknown, id)
			continue
		}
		resp.Sessions = append(resp.Sessions, SyncSession{ID: id, Messages: p.snapshot(since)})
	}
	return resp, unknown
}

// syncSince is a sync_request's timestamp as a stamp.
func syncSince(req Command) (int64, error) {
	if req.LastEventTimestamp == "" || req.LastEventTimestamp == epochTimestamp {
		return 0, nil
	}
	t, err := ParseTimestamp(req.LastEventTimestamp)
	if err != nil {
		return 0, err
	}
	return t.UnixMicro(), nil
}

// sync answers sync_request by folding the feed from the log up to its
// end: for each session the orchestrator caches, and each one with events
// after its timestamp, the messages changed since. since is the timestamp
// as a stamp, from which the event stream resumes. It is what every
// reconnect did before the daemon kept its projection, and what it does
// still when the orchestrator's timestamp is older than what it keeps.
func (s *Service) sync(ctx context.Context, req Command) (resp SyncResponse, since int64, err error) {
	if since, err = syncSince(req); err != nil {
		return SyncResponse{}, 0, err
	}
	end, err := s.Sessions.FeedEnd()
	if err != nil {
		return SyncResponse{}, 0, err
	}
	st := newFeedState()
	oldest, err := s.oldest()
	if err != nil {
		return SyncResponse{}, 0, err
	}
	if end > oldest { // else there is nothing to fold, and a fold would wait for what comes
		err = s.fold(ctx, func(uint64) { st = newFeedState() }, func(fe sessions.FeedEvent) error {
			if fe.Pos > end {
				return errFoldDone
			}
			st.apply(fe)
			if fe.Pos == end {
				return errFoldDone
			}
			return nil
		})
		if err != nil && !errors.Is(err, errFoldDone) {
			return SyncResponse{}, 0, err
		}
	}
	resp, _ = st.response(req.CachedSessionIDs, since)
	return resp, since, nil
}

// oldest is the feed position a fold starts after: 0, unless the log's
// retention has dropped the feed's beginning (then the projection of a
// session older than what is left starts where the feed does).
func (s *Service) oldest() (uint64, error) {
	first, err := s.Sessions.FeedStart()
	if err != nil || first <= 1 {
		return 0, err
	}
	return first - 1, nil
}

// encodeFrame is one mast event's frame as written: segmentio/encoding
// writes the same bytes as encoding/json
// (TestFramesEncodeAsTheStandardLibrary) with half its allocations on
// mast.*'s maps.
func encodeFrame(e Event, stamp int64) ([]byte, error) {
	return segjson.Marshal(EventFrame{Type: "event", Event: e, Timestamp: Timestamp(time.UnixMicro(stamp))})
}

// errCaughtUp ends a fold from the log once what it would send next is
// in the daemon's window.
var errCaughtUp = errors.New("mast: caught up with the window")

// stream sends as event frames every mast event of the feed after
// position from whose stamp is after since, folding everything from the
// log's start and sending nothing before, then live, until ctx ends or
// send fails. sent is told each position once all its frames are
// written. caughtUp, when set, is asked after each position: true ends
// the fold with errCaughtUp, and last is that position.
func (s *Service) stream(ctx context.Context, from uint64, since int64, send func([]byte) error, sent func(uint64),
	caughtUp func(pos uint64) bool) (last uint64, err error) {
	var st *feedState
	last = from
	err = s.fold(ctx, func(uint64) { st = newFeedState() }, func(fe sessions.FeedEvent) error {
		events, stamps := st.apply(fe)
		if fe.Pos > from {
			for i, e := range events {
				if stamps[i] <= since {
					continue
				}
				data, err := encodeFrame(e, stamps[i])
				if err != nil {
					s.logger().Error("mast event not encodable: not sent", "type", e.Type, "session", e.SessionID, "err", err)
					continue
				}
				if err := send(data); err != nil {
					return err
				}
			}
			from = fe.Pos // a fold that starts over sends nothing twice
			sent(fe.Pos)
		}
		last = max(last, fe.Pos)
		if caughtUp != nil && caughtUp(last) {
			return errCaughtUp
		}
		return nil
	})
	return last, err
}

// noStamp is a since that filters nothing.
const noStamp = math.MinInt64

// errFoldDone ends a fold that has read what it needs.
var errFoldDone = errors.New("mast: fold done")

// fold hands fn the feed from what the log's retention kept on, then live,
// until ctx ends or fn fails. Retention may drop events ahead of a slow
// reader meanwhile: then the fold starts over from what is kept, begin
// telling it to start its state anew (after position oldest), rather than
// the stream failing and the connection with it.
func (s *Service) fold(ctx context.Context, begin func(oldest uint64), fn func(sessions.FeedEvent) error) error {
	for {
		oldest, err := s.oldest()
		if err != nil {
			return err
		}
		begin(oldest)
		err = func() error {
			for fe, err := range s.Sessions.Feed(ctx, oldest) {
				if err != nil {
					return err
				}
				if err := fn(fe); err != nil {
					return err
				}
			}
			return ctx.Err()
		}()
		if !errors.Is(err, eventlog.ErrTruncated) || ctx.Err() != nil {
			return err
		}
	}
}
