package fleet

import (
	"context"
	"errors"
	"fmt"

	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
	if err == nil {
		l.pub.mark(session)
	}
	return first, pos, err
}

// Log wraps the runner's own log so that what it appends reaches the
// fleet. Call it once, before the session core opens on the log.
func (f *Fleet) Log(local eventlog.Log) *Log {
	f.pub = newPublisher(f, local)
	return &Log{Log: local, pub: f.pub}
}

// maxRound bounds the events a round publishes of one session, so one
// busy session does not hold up the others.
const maxRound = 2048

// errNoAck: a publish got neither its ack nor an error in time.
var errNoAck = errors.New("fleet: no ack from the stream")

// maxInFlight bounds the events published and not yet acked: a failure
// can leave a hole no further back than that, which a runner that starts
// again sends anew (see stateOf).
const maxInFlight = 512

// publisher copies the local log into the stream, each session in seq
// order, each event once. It does not wait for a round's acks before the
// next: a settler takes them in order on a goroutine of its own, and a
// failure rewinds the session to its last acked event and publishes the
// rest again, with the same message ids (the stream drops what landed).
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
	streamSeq uint64 // that event's position in the stream
	next      uint64 // the last seq published (>= seq)
	inFlight  int    // its events published and not yet acked
	epoch     int    // bumped by a failure: acks of the epoch before are stale
	known     bool   // seq and streamSeq were read from the stream or acks
	clean     bool   // streamSeq is the stream's last of the session: fence the next publish
	fenced    bool   // another runner writes this session now
	// fenceSeq, fencePos: the stream's last event of the session when the
	// publisher read it; the event after it expects that position.
	fenceSeq, fencePos uint64
}

func newPublisher(f *Fleet, local eventlog.Log) *publisher {
	return &publisher{f: f, local: local, log: f.log, dirty: map[string]bool{}, state: map[string]*pubState{},
		wake: make(chan struct{}, 1), room: make(chan struct{}, 1),
		sent: make(chan sent, maxInFlight)}
}

func (p *publisher) mark(session string) {
	p.mu.Lock()
	p.dirty[session] = true
	p.mu.Unlock()
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
	seq     uint64
	epoch   int
	fut     jetstream.PubAckFuture
}

// round publishes what the dirty sessions hold beyond what was published,
// and reports whether any of it must be tried again after a pause.
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
			p.mark(s)
			failed = true
			continue
		}
		p.mu.Lock()
		fenced := st.fenced
		p.mu.Unlock()
		if fenced {
			continue
		}
		more, err := p.publishSession(ctx, s, st)
		if err != nil {
			p.log.Debug("fleet: publish failed; will retry", "session", s, "err", err)
			p.mark(s)
			failed = true
		} else if more {
			p.mark(s)
		}
	}
	return failed
}

// stateOf is what the stream holds of session, read from it the first
// time (a restarted runner, a session taken over).
func (p *publisher) stateOf(ctx context.Context, session string) (*pubState, error) {
	p.mu.Lock()
	st := p.state[session]
	if st != nil && st.known {
		p.mu.Unlock()
		return st, nil
	}
	p.mu.Unlock()
	seq, streamSeq, _, err := p.f.lastEvent(ctx, session)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if st == nil {
		st = &pubState{}
		p.state[session] = st
	}
	// The stream's last event may lie past a hole the runner's last run
	// left (a failed publish it had no time to send again): when the
	// stream holds fewer of the session's events than the log, send them
	// all again (the stream drops what it has within its duplicate
	// window, readers what it kept twice); else the in-flight window
	// before the last. The first event past it is fenced on the stream's
	// last.
	from := seq - min(seq, maxInFlight)
	if p.holes(ctx, session, seq) {
		from = 0
	}
	st.seq, st.next, st.known, st.clean = from, from, true, false
	st.fenceSeq, st.fencePos = seq, streamSeq
	return st, nil
}

// holes says whether the stream holds fewer of session's events up to
// seq than the local log does (which, retention aside, has every seq but
// the gaps a crash left).
func (p *publisher) holes(ctx context.Context, session string, seq uint64) bool {
	if seq == 0 {
		return false
	}
	first, err := p.local.First(session)
	if err != nil || first == 0 || first > seq {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	subject := eventSubject(session)
	info, err := p.f.events.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return true // not knowing: send again
	}
	return info.State.Subjects[subject] < seq-first+1
}

// publishSession sends session's events after the last published, at
// most maxRound of them; more says there were more.
func (p *publisher) publishSession(ctx context.Context, session string, st *pubState) (more bool, err error) {
	p.mu.Lock()
	after, epoch := st.next, st.epoch
	fence := st.inFlight == 0 && st.clean
	expect := st.streamSeq
	fenceSeq, fencePos := st.fenceSeq, st.fencePos
	p.mu.Unlock()
	n := 0
	subject := eventSubject(session)
	for ev, err := range p.local.Read(ctx, session, after) {
		if err != nil {
			return false, err
		}
		if n == maxRound {
			return true, nil
		}
		if !p.waitForRoom(ctx) {
			return false, ctx.Err()
		}
		m := &nats.Msg{Subject: subject, Data: ev.Payload, Header: nats.Header{}}
		seq := strconv.FormatUint(ev.Seq, 10)
		m.Header.Set(seqHeader, seq)
		m.Header.Set(runnerHeader, p.f.cfg.Name)
		opts := []jetstream.PublishOpt{jetstream.WithMsgID(session + ":" + seq)}
		switch {
		case ev.Seq == fenceSeq+1 && fencePos > 0:
			opts = append(opts, jetstream.WithExpectLastSequencePerSubject(fencePos))
		case n == 0 && fence:
			// Fences out a second writer: the stream must end where this
			// runner left it.
			opts = append(opts, jetstream.WithExpectLastSequencePerSubject(expect))
		}
		p.mu.Lock()
		if st.epoch != epoch {
			// A failure rewound the session meanwhile: the round it asked
			// for sends from there.
			p.mu.Unlock()
			return false, nil
		}
		p.mu.Unlock()
		fut, err := p.f.js.PublishMsgAsync(m, opts...)
		if err != nil {
			return false, err
		}
		p.mu.Lock()
		if st.epoch == epoch {
			st.next = ev.Seq
		}
		st.inFlight++
		p.inFlight++
		p.mu.Unlock()
		p.sent <- sent{session: session, seq: ev.Seq, epoch: epoch, fut: fut}
		n++
	}
	return false, nil
}

// waitForRoom waits while maxInFlight events wait for their acks.
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
// session's mark to its last event acked without a gap before it.
func (p *publisher) settle(ctx context.Context) {
	for {
		var s sent
		select {
		case <-ctx.Done():
			return
		case s = <-p.sent:
		}
		var ack *jetstream.PubAck
		var err error
		timer := time.NewTimer(ackTimeout + time.Second) // the client's own timeout, should it not fire
		select {
		case ack = <-s.fut.Ok():
		case err = <-s.fut.Err():
		case <-timer.C:
			err = errNoAck
		case <-ctx.Done():
			timer.Stop()
			return
		}
		timer.Stop()
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
		if current && err == nil && s.seq > st.seq {
			st.seq, st.streamSeq, st.clean = s.seq, ack.Sequence, true
		}
		if current && err != nil {
			p.dirty[s.session] = true // before anyone sees nothing in flight
		}
		if err == nil && s.seq == st.fenceSeq+1 {
			st.fenceSeq, st.fencePos = 0, 0 // passed
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

// failed handles a publish the stream refused or did not answer: a wrong
// last sequence from another runner's event means the session is no
// longer this runner's; anything else is tried again from the stream's
// state, with the same message ids.
func (p *publisher) failed(ctx context.Context, s sent, st *pubState, err error) {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		if _, _, runner, lerr := p.f.lastEvent(ctx, s.session); lerr == nil && runner != p.f.cfg.Name {
			p.mu.Lock()
			st.fenced = true
			delete(p.dirty, s.session) // nothing of it is this runner's to send
			p.settledLocked()
			p.mu.Unlock()
			p.log.Warn("fleet: another runner now writes this session's events; this runner stops publishing them",
				"session", s.session, "writer", runner)
			return
		}
	}
	p.log.Debug("fleet: publish failed; will retry", "session", s.session, "seq", s.seq, "err", err)
	p.mu.Lock()
	// Send again from the last event acked, with the same ids: what
	// landed after it is dropped by the stream as a duplicate, and what
	// did not is not skipped over (the stream's last event may lie past
	// a hole the failure left).
	st.epoch++
	st.next, st.clean = st.seq, false
	p.mu.Unlock()
	p.mark(s.session)
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
	st.known, st.clean, st.fenced = true, true, false
	st.fenceSeq, st.fencePos = seq, pos
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
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := f.lastStored(ctx, eventSubject(session))
	if errors.Is(err, errNoMessage) {
		return 0, 0, "", nil
	}
	if err != nil {
		return 0, 0, "", err
	}
	if seq, err = seqOf(m.header); err != nil {
		return 0, 0, "", fmt.Errorf("fleet: event %d of the stream has no %s: %w", m.pos, seqHeader, err)
	}
	return seq, m.pos, m.header.Get(runnerHeader), nil
}
