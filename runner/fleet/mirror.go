package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/eventlog"
)

// Log is the runner's event log as a fleet member keeps it: the local log
// holds every event first (the core's speed, and the outbox), and each
// append wakes the publisher that copies it into the fleet's stream.
type Log struct {
	eventlog.Log
	pub *publisher
}

// AppendAt logs the events locally, then marks the session for the
// publisher.
func (l *Log) AppendAt(ctx context.Context, session string, payloads [][]byte) (first, pos uint64, err error) {
	first, pos, err = l.Log.AppendAt(ctx, session, payloads)
	if err == nil && len(payloads) > 0 {
		l.pub.mark(session, first+uint64(len(payloads))-1)
	}
	return first, pos, err
}

// Log wraps the runner's own log so that what it appends reaches the
// fleet. Call it once, before the session core opens on the log.
func (f *Fleet) Log(local eventlog.Log) *Log {
	f.pub = newPublisher(f, local)
	return &Log{Log: local, pub: f.pub}
}

// errNoAck: a publish got neither its ack nor an error in time.
var errNoAck = errors.New("fleet: no ack from the stream")

// maxInFlight bounds the messages published and not yet acked, one at
// most of each session.
const maxInFlight = 512

// publisher copies the local log into the stream, each session in seq
// order, each event once. A session has one message in flight at a time,
// holding every event its log gained since the last (a batch), and each
// message expects the stream position of the session's message before it:
// the stream holds a gapless copy of the log, a second writer is fenced
// out, and a failure needs no more than a look at where the stream ends.
// Sessions are published side by side; a settler takes the acks in order
// on a goroutine of its own.
type publisher struct {
	f     *Fleet
	local eventlog.Log
	log   *slog.Logger

	mu       sync.Mutex
	dirty    map[string]bool
	state    map[string]*pubState
	busy     bool          // a round is publishing
	inFlight int           // published, not yet acked or failed
	wake     chan struct{} // capacity 1
	room     chan struct{} // capacity 1: acks made room under maxInFlight
	synced   settled       // when nothing is left to publish or ack
	sent     chan sent     // to the settler, in publish order
}

type pubState struct {
	seq       uint64 // the session's last seq acked in the stream
	streamSeq uint64 // that message's position in the stream (0: the stream holds none)
	next      uint64 // the last seq published (>= seq)
	tail      uint64 // the last seq appended to the log, as far as marked
	more      bool   // the last batch was full: the log holds more
	inFlight  int    // its messages published and not yet acked (0 or 1)
	epoch     int    // bumped by a failure or a take-over: acks of the epoch before are stale
	known     bool   // seq and streamSeq were read from the stream or acks
	fenced    bool   // another runner writes this session now
	adopted   bool   // this runner took the session over: the stream's last event is another's
}

func newPublisher(f *Fleet, local eventlog.Log) *publisher {
	return &publisher{f: f, local: local, log: f.log, dirty: map[string]bool{}, state: map[string]*pubState{},
		wake: make(chan struct{}, 1), room: make(chan struct{}, 1),
		sent: make(chan sent, maxInFlight)}
}

// mark says session's log holds events up to seq last (0: unknown) that
// may not be in the stream yet.
func (p *publisher) mark(session string, last uint64) {
	p.mu.Lock()
	p.dirty[session] = true
	if st := p.state[session]; st != nil {
		st.tail = max(st.tail, last)
	} else if last > 0 {
		p.state[session] = &pubState{tail: last}
	}
	p.mu.Unlock()
	p.wakeUp()
}

func (p *publisher) wakeUp() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run publishes until ctx ends, with its settler; after a failure it
// pauses, growing, so a dropped link is not a busy loop (the local log
// keeps the events meanwhile).
func (p *publisher) run(ctx context.Context) {
	settled := make(chan struct{})
	go func() { defer close(settled); p.settle(ctx) }()
	defer func() { <-settled }()
	pause := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		if p.round(ctx) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, 2*time.Second)
			continue
		}
		pause = 100 * time.Millisecond
	}
}

// Sync waits until everything appended before it is in the stream.
func (p *publisher) Sync(ctx context.Context) error {
	return p.synced.wait(ctx, &p.mu, func() bool { return len(p.dirty) == 0 && !p.busy && p.inFlight == 0 })
}

// settledLocked tells Sync's waiters when nothing is left. Under p.mu.
func (p *publisher) settledLocked() {
	if len(p.dirty) == 0 && !p.busy && p.inFlight == 0 {
		p.synced.broadcast()
	}
}

type sent struct {
	session string
	seq     uint64 // the batch's last
	epoch   int
	fut     jetstream.PubAckFuture
}

// round publishes a batch of each dirty session that has none in flight
// (the ack of the one in flight marks it again), and reports whether any
// must be tried again after a pause.
func (p *publisher) round(ctx context.Context) (failed bool) {
	p.mu.Lock()
	sessions := make([]string, 0, len(p.dirty))
	for s := range p.dirty {
		sessions = append(sessions, s)
	}
	clear(p.dirty)
	p.busy = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.busy = false
		p.settledLocked()
		p.mu.Unlock()
	}()
	for _, s := range sessions {
		st, err := p.stateOf(ctx, s)
		if err != nil {
			p.log.Warn("fleet: the stream's last event of a session is unknown; will retry", "session", s, "err", err)
			p.mark(s, 0)
			failed = true
			continue
		}
		p.mu.Lock()
		skip := st.fenced || st.inFlight > 0
		if st.inFlight > 0 {
			st.more = true // its ack sends what came meanwhile
		}
		p.mu.Unlock()
		if skip {
			continue
		}
		if err := p.publishSession(ctx, s, st); err != nil {
			p.log.Debug("fleet: publish failed; will retry", "session", s, "err", err)
			p.mark(s, 0)
			failed = true
		}
	}
	return failed
}

// stateOf is what the stream holds of session, read from it the first
// time and after a failure (a restarted runner, a publish that may or may
// not have landed): the next batch follows the stream's last event.
func (p *publisher) stateOf(ctx context.Context, session string) (*pubState, error) {
	p.mu.Lock()
	st := p.state[session]
	if st != nil && st.known {
		p.mu.Unlock()
		return st, nil
	}
	p.mu.Unlock()
	seq, last, err := p.f.lastMessage(ctx, session)
	if err != nil {
		return nil, err
	}
	streamSeq, runner := last.pos, last.header.Get(runnerHeader)
	another := runner != "" && runner != p.f.cfg.Name
	tookOver := false
	if another {
		if tookOver, err = p.holdsLast(ctx, session, last); err != nil {
			return nil, err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if st == nil {
		st = &pubState{}
		p.state[session] = st
	}
	st.seq, st.next, st.streamSeq, st.known = seq, seq, streamSeq, true
	st.adopted = st.adopted || tookOver
	if another && !st.adopted {
		p.fenceLocked(session, st, runner)
	}
	return st, nil
}

// holdsLast says whether this runner's log holds the last event of the
// stream's message last of session, another runner's, as its own: the
// runner took the session over, copying its history from the stream, and
// may have restarted since. Its log then goes on from the stream's end,
// and it writes the session's next events. A runner the fleet took for
// lost holds its own events at that seq, or none.
func (p *publisher) holdsLast(ctx context.Context, session string, last storedMsg) (bool, error) {
	stored, err := splitBatch(last.header, last.data)
	if err != nil || len(stored) == 0 {
		return false, err
	}
	theirs := stored[len(stored)-1]
	for ev, err := range p.local.Read(ctx, session, theirs.seq-1) {
		return err == nil && ev.Seq == theirs.seq && sameEvent(ev.Payload, theirs.payload), nil
	}
	return false, nil
}

// sameEvent says whether two logged events are one: a copy keeps the
// kind and the time to the nanosecond, which two runners' events do not
// share.
func sameEvent(a, b []byte) bool {
	var x, y struct {
		Kind agent.Kind `json:"kind"`
		Time time.Time  `json:"time"`
	}
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && x.Kind == y.Kind && !x.Time.IsZero() && x.Time.Equal(y.Time)
}

// fenceLocked stops publishing session: runner writes it now (the fleet
// ended it for this runner, taken for lost). Under p.mu.
func (p *publisher) fenceLocked(session string, st *pubState, runner string) {
	st.fenced = true
	delete(p.dirty, session) // nothing of it is this runner's to send
	p.settledLocked()
	p.log.Warn("fleet: another runner now writes this session's events; this runner stops publishing them",
		"session", session, "writer", runner)
}

// publishSession sends the events of session past the last published, as
// many as one batch holds, expecting the stream to end where the last
// batch did.
func (p *publisher) publishSession(ctx context.Context, session string, st *pubState) error {
	p.mu.Lock()
	after, epoch, expect := st.next, st.epoch, st.streamSeq
	p.mu.Unlock()
	var b batch
	more := false
	for ev, err := range p.local.Read(ctx, session, after) {
		if errors.Is(err, eventlog.ErrAhead) {
			// The stream holds seqs this log lost in a crash (published
			// before they were on disk): readers have those from the
			// stream, and what the log numbers again up to them is not
			// sent. What follows them is, once the log gets there.
			p.log.Warn("fleet: the stream is ahead of the session's log, which lost events in a crash; its events up to the stream's last are not published",
				"session", session, "stream_last", after, "err", err)
			return nil
		}
		if err != nil {
			return err
		}
		if !b.fits(len(ev.Payload)) {
			more = true
			break
		}
		b.add(ev.Seq, ev.Payload)
	}
	if b.n == 0 {
		return nil
	}
	if !p.waitForRoom(ctx) {
		return ctx.Err()
	}
	p.mu.Lock()
	if st.epoch != epoch {
		// A take-over moved the session meanwhile: the round it asked
		// for sends from there.
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	fut, err := p.f.js.PublishMsgAsync(b.msg(eventSubject(session), p.f.cfg.Name),
		jetstream.WithMsgID(b.msgID(session)), jetstream.WithExpectLastSequencePerSubject(expect))
	if err != nil {
		return err
	}
	p.mu.Lock()
	st.next, st.more = b.last, more
	st.inFlight++
	p.inFlight++
	p.mu.Unlock()
	p.sent <- sent{session: session, seq: b.last, epoch: epoch, fut: fut}
	return nil
}

// waitForRoom waits while maxInFlight messages wait for their acks.
func (p *publisher) waitForRoom(ctx context.Context) bool {
	for {
		p.mu.Lock()
		ok := p.inFlight < maxInFlight
		p.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-p.room:
		case <-ctx.Done():
			return false
		}
	}
}

// settle takes the acks in publish order until ctx ends, and moves each
// session's mark to its last event acked.
func (p *publisher) settle(ctx context.Context) {
	for {
		var s sent
		select {
		case <-ctx.Done():
			return
		case s = <-p.sent:
		}
		ack, err := p.await(ctx, s)
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		p.inFlight--
		st := p.state[s.session]
		if st == nil { // cannot happen: forget keeps what is in flight
			p.settledLocked()
			p.mu.Unlock()
			continue
		}
		st.inFlight--
		current := s.epoch == st.epoch
		switch {
		case current && err == nil:
			st.seq, st.streamSeq = s.seq, ack.Sequence
			if st.more || st.tail > st.next {
				p.dirty[s.session] = true
				p.wakeUp()
			}
		case current:
			p.dirty[s.session] = true // before anyone sees nothing in flight
		case st.inFlight == 0 && st.known && !st.fenced:
			p.dirty[s.session] = true // a stale ack held the session's next batch back
			p.wakeUp()
		}
		p.mu.Unlock()
		if current && err != nil {
			p.failed(ctx, s, st, err)
		}
		p.mu.Lock()
		p.settledLocked()
		p.mu.Unlock()
		select {
		case p.room <- struct{}{}:
		default:
		}
	}
}

// await is a publish's ack or error, or errNoAck should the client's own
// timeout not fire.
func (p *publisher) await(ctx context.Context, s sent) (*jetstream.PubAck, error) {
	timer := time.NewTimer(ackTimeout + time.Second)
	defer timer.Stop()
	select {
	case ack := <-s.fut.Ok():
		return ack, nil
	case err := <-s.fut.Err():
		return nil, err
	case <-timer.C:
		return nil, errNoAck
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// failed handles a publish the stream refused or did not answer: a wrong
// last sequence from another runner's event means the session is no
// longer this runner's; anything else (the batch may or may not have
// landed) is tried again from where the stream ends.
func (p *publisher) failed(ctx context.Context, s sent, st *pubState, err error) {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		if _, _, runner, lerr := p.f.lastEvent(ctx, s.session); lerr == nil && runner != p.f.cfg.Name {
			p.mu.Lock()
			// Unless this runner took it over meanwhile (its next publish
			// expects the other runner's last event).
			if s.epoch == st.epoch {
				p.fenceLocked(s.session, st, runner)
			}
			p.mu.Unlock()
			return
		}
	}
	p.log.Debug("fleet: publish failed; will retry", "session", s.session, "seq", s.seq, "err", err)
	p.mu.Lock()
	if s.epoch == st.epoch {
		st.epoch++
		st.known = false
	}
	p.mu.Unlock()
	p.mark(s.session, 0)
}

// adopt starts the publisher's state of a session this runner takes
// over: the stream holds it up to seq, at stream position pos, and its
// next event expects that position, which fences out the lost runner.
func (p *publisher) adopt(session string, seq, pos uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state[session]
	if st == nil {
		st = &pubState{}
		p.state[session] = st
	}
	st.epoch++ // what the publisher had in flight of it before is stale
	st.seq, st.streamSeq, st.next = seq, pos, seq
	st.known, st.fenced, st.adopted, st.more = true, false, true, false
}

// forget drops what the publisher keeps of a session that has ended and
// is all in the stream.
func (p *publisher) forget(session string) {
	p.mu.Lock()
	// Not while a round may hold its state (it would publish on a copy
	// nobody settles).
	if st := p.state[session]; !p.busy && !p.dirty[session] && (st == nil || st.inFlight == 0) {
		delete(p.state, session)
	}
	p.mu.Unlock()
}

// lastEvent reads session's last event in the stream, from its leader:
// its seq, its position in the stream and the runner that wrote it (zeros
// when the stream holds none).
func (f *Fleet) lastEvent(ctx context.Context, session string) (seq, streamSeq uint64, runner string, err error) {
	seq, m, err := f.lastMessage(ctx, session)
	return seq, m.pos, m.header.Get(runnerHeader), err
}

// lastMessage is lastEvent's seq with the message that holds it (zero
// when the stream holds none).
func (f *Fleet) lastMessage(ctx context.Context, session string) (seq uint64, m storedMsg, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err = f.lastStored(ctx, eventSubject(session))
	if errors.Is(err, errNoMessage) {
		return 0, storedMsg{}, nil
	}
	if err != nil {
		return 0, storedMsg{}, err
	}
	if seq, err = seqOf(m.header); err != nil {
		return 0, storedMsg{}, fmt.Errorf("fleet: event %d of the stream has no %s: %w", m.pos, seqHeader, err)
	}
	return seq, m, nil
}
