package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/agent"
)

// ErrOutOfOrder: a session's events are further out of order in the
// stream than a reader can put right (reorderRoom).
var ErrOutOfOrder = errors.New("fleet: a session's events are out of order in the stream")

const (
	// reorderRoom is how many events a reader holds while it waits for
	// one that a retried publish put later in the stream.
	reorderRoom = 4096
	// fetchBatch is how many events one direct get asks for.
	fetchBatch = 256
	// pollEvery is how often a reader that heard nothing looks at the
	// stream itself: a live message is at most once, and a lost one at
	// the tail would otherwise wait for the next.
	pollEvery = time.Second
	// liveRoom is how many live messages a reader buffers; past it they
	// are dropped, and the reader fetches what it missed.
	liveRoom = 1024
	// gapWait is how long a reader waits for a seq the stream lacks while
	// it holds later ones: a failed publish is sent again within it (see
	// ackTimeout); past it, the seqs are a gap of the session's own log
	// (a crash lost them there) and the reader goes on after them.
	gapWait = 3 * ackTimeout
)

// streamEvents yields session's events after seq `after` as the stream
// holds them, then live ones, until its session.ended or ctx ends: each
// seq once, in order. It catches up with direct gets (any replica
// answers), then follows the stream's republished messages, which carry
// the stream position of the subject's previous message, so a missed
// one is fetched; it never reads a message the stream has not stored.
func (f *Fleet) streamEvents(ctx context.Context, session string, after uint64) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		live := make(chan *nats.Msg, liveRoom)
		sub, err := f.nc.ChanSubscribe(liveSubject(session), live)
		if err != nil {
			yield(agent.Event{}, fmt.Errorf("fleet: reading session %s: %w", session, err))
			return
		}
		defer sub.Unsubscribe()
		r := &streamReader{ctx: ctx, f: f, session: session, next: after + 1, held: map[uint64]agent.Event{}, yield: yield}
		for {
			done, err := r.fetch(ctx)
			if done {
				return
			}
			if err == nil {
				break
			}
			select { // no stream leader or replica answers yet
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		if r.ended && r.lastSeq < r.next {
			return // it ended before `after`
		}
		poll := time.NewTimer(pollEvery)
		defer poll.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-live:
				if r.live(ctx, m) {
					return
				}
			case <-poll.C:
				if done, _ := r.fetch(ctx); done {
					return
				}
			}
			poll.Reset(pollEvery)
		}
	}
}

// streamReader is one reader's place in a session's part of the stream.
type streamReader struct {
	ctx     context.Context
	f       *Fleet
	session string
	yield   func(agent.Event, error) bool

	pos     uint64 // stream position of the last message read
	next    uint64 // the seq to yield next
	held    map[uint64]agent.Event
	lastSeq uint64 // highest seq in the stream so far
	ended   bool   // that event is session.ended
	// heldSince is when the reader began to hold events for a missing
	// seq (zero while it holds none).
	heldSince time.Time
}

// live takes a republished message; done says the reader is finished.
func (r *streamReader) live(ctx context.Context, m *nats.Msg) (done bool) {
	pos, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	prev, _ := strconv.ParseUint(m.Header.Get("Nats-Last-Sequence"), 10, 64)
	switch {
	case pos <= r.pos:
		return false // fetched already
	case prev != r.pos:
		done, _ = r.fetch(ctx) // one went missing: read from the stream
		return done
	}
	r.pos = pos
	return r.take(m.Header, m.Data)
}

// fetch reads the stream after the reader's position to its end; done
// says the reader is finished (its consumer stopped, or the session
// ended), err that the stream did not answer in time.
func (r *streamReader) fetch(ctx context.Context) (done bool, err error) {
	for {
		n, pending, done, err := r.fetchBatch(ctx)
		if done || err != nil {
			return done, err
		}
		if n > 0 && pending > 0 {
			continue
		}
		// A replica that is behind answers "nothing more" too: the end
		// is where the leader says, and the leader gives what it lacks.
		last, err := r.leaderLast(ctx)
		if err != nil {
			return false, err
		}
		if last <= r.pos {
			return r.passGap(), nil
		}
		if done, err := r.fetchFromLeader(ctx); done || err != nil {
			return done, err
		}
	}
}

// fetchFromLeader reads the next message after the reader's position from
// the stream's leader.
func (r *streamReader) fetchFromLeader(ctx context.Context) (done bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	m, err := r.f.nextStored(ctx, eventSubject(r.session), r.pos)
	if errors.Is(err, errNoMessage) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.pos = m.pos
	return r.take(m.header, m.data), nil
}

// leaderLast is the stream position of the session's last message, as
// the stream's leader has it (0: none).
func (r *streamReader) leaderLast(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	m, err := r.f.lastStored(ctx, eventSubject(r.session))
	if errors.Is(err, errNoMessage) {
		return 0, nil
	}
	return m.pos, err
}

func (r *streamReader) fetchBatch(ctx context.Context) (n int, pending uint64, done bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	inbox := r.f.nc.NewRespInbox()
	sub, err := r.f.nc.SubscribeSync(inbox)
	if err != nil {
		return 0, 0, false, err
	}
	defer sub.Unsubscribe()
	req, _ := json.Marshal(map[string]any{"seq": r.pos + 1, "next_by_subj": eventSubject(r.session), "batch": fetchBatch})
	if err := r.f.nc.PublishRequest("$JS.API.DIRECT.GET."+eventStream, inbox, req); err != nil {
		return 0, 0, false, err
	}
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return n, 0, false, err
		}
		switch m.Header.Get("Status") {
		case "404": // nothing after pos
			return n, 0, false, nil
		case "204": // the batch's end
			pending, _ = strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
			return n, pending, false, nil
		case "":
		default:
			return n, 0, false, fmt.Errorf("fleet: reading session %s: %s %s", r.session, m.Header.Get("Status"), m.Header.Get("Description"))
		}
		if pos, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64); pos > r.pos {
			r.pos = pos
		}
		n++
		if r.take(m.Header, m.Data) {
			return n, 0, true, nil
		}
	}
}

// passGap goes on past a missing seq the reader has waited gapWait for,
// with the stream read to its end; done says the reader is finished.
func (r *streamReader) passGap() (done bool) {
	if len(r.held) == 0 || time.Since(r.heldSince) < gapWait {
		return false
	}
	r.next = slices.Min(slices.Collect(maps.Keys(r.held)))
	return r.release()
}

// take yields what an event message makes ready, in seq order; done says
// the reader is finished.
func (r *streamReader) take(h nats.Header, data []byte) (done bool) {
	events, err := splitBatch(h, data)
	if err != nil {
		r.yield(agent.Event{}, fmt.Errorf("fleet: reading session %s: %w", r.session, err))
		return true
	}
	for _, le := range events {
		if r.takeOne(le.seq, le.payload) {
			return true
		}
	}
	return false
}

// takeOne is take for one event of a message.
func (r *streamReader) takeOne(seq uint64, data []byte) (done bool) {
	e, err := agent.DecodeLogged(data)
	if err != nil {
		r.yield(agent.Event{}, fmt.Errorf("fleet: event %d of session %s: %w", seq, r.session, err))
		return true
	}
	if seq >= r.lastSeq {
		r.lastSeq, r.ended = seq, e.Kind == agent.KindSessionEnded
	}
	if seq < r.next {
		return false // before `after`, or a duplicate
	}
	e.Seq = int64(seq)
	if len(r.held) == 0 {
		r.heldSince = time.Now()
	}
	r.held[seq] = e
	if len(r.held) > reorderRoom {
		r.yield(agent.Event{}, fmt.Errorf("%w: session %s waits for %d", ErrOutOfOrder, r.session, r.next))
		return true
	}
	return r.release()
}

// release yields the held events from next on while they follow one
// another; done says the reader is finished.
func (r *streamReader) release() (done bool) {
	from := r.next
	for {
		e, ok := r.held[r.next]
		if !ok {
			if r.next != from && len(r.held) > 0 {
				r.heldSince = time.Now() // waits for the next missing one afresh
			}
			return false
		}
		delete(r.held, r.next)
		r.next++
		if !r.yield(e, nil) || (e.Kind == agent.KindSessionEnded && r.endsHere(uint64(e.Seq))) {
			return true
		}
	}
}

// endsHere says whether a session.ended at seq is the session's end: no
// event follows it in the stream (one that did would be a session taken
// over by another runner, going on under the same id).
func (r *streamReader) endsHere(seq uint64) bool {
	if r.lastSeq > seq {
		return false
	}
	ctx, cancel := context.WithTimeout(r.ctx, attemptTimeout)
	defer cancel()
	last, _, _, err := r.f.lastEvent(ctx, r.session)
	return err != nil || last <= seq
}

// endedBy says whether session's last event in the stream is its end and
// a reader after seq `after` has seen it: there is nothing to wait for.
// Not knowing (no answer in time) is "no".
func (f *Fleet) endedBy(ctx context.Context, session string, after uint64) bool {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	m, err := f.lastStored(ctx, eventSubject(session))
	if err != nil {
		return false
	}
	events, err := splitBatch(m.header, m.data)
	if err != nil || len(events) == 0 || lastSeq(events) > after {
		return false
	}
	e, err := agent.DecodeLogged(events[len(events)-1].payload)
	return err == nil && e.Kind == agent.KindSessionEnded
}
