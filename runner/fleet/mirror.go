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

// publisher copies the local log into the stream, each session in seq
// order, each event once.
type publisher struct {
	f     *Fleet
	local eventlog.Log
	log   *slog.Logger

	mu     sync.Mutex
	dirty  map[string]bool
	state  map[string]*pubState
	busy   bool          // a round is publishing
	wake   chan struct{} // capacity 1
	synced chan struct{} // closed and replaced when a round leaves nothing dirty
}

type pubState struct {
	seq       uint64 // the session's last seq in the stream
	streamSeq uint64 // that event's position in the stream
	known     bool   // seq and streamSeq were read from the stream or acks
	clean     bool   // the last round ended without a failure: fence the next one
	fenced    bool   // another runner writes this session now
}

func newPublisher(f *Fleet, local eventlog.Log) *publisher {
	return &publisher{f: f, local: local, log: f.log, dirty: map[string]bool{}, state: map[string]*pubState{},
		wake: make(chan struct{}, 1), synced: make(chan struct{})}
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

// run publishes until ctx ends, retrying with a growing pause while NATS
// does not take the events (a dropped link: the local log keeps them).
func (p *publisher) run(ctx context.Context) {
	pause := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		for {
			failed := p.round(ctx)
			if !failed {
				pause = 100 * time.Millisecond
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, 2*time.Second)
		}
	}
}

// Sync waits until everything appended before it is in the stream.
func (p *publisher) Sync(ctx context.Context) error {
	for {
		p.mu.Lock()
		done := len(p.dirty) == 0 && !p.busy
		ch := p.synced
		p.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

type sent struct {
	session string
	seq     uint64
	fut     jetstream.PubAckFuture
}

// round publishes what the dirty sessions hold beyond the stream, and
// reports whether any of it must be tried again.
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
		if len(p.dirty) == 0 {
			close(p.synced)
			p.synced = make(chan struct{})
		}
		p.mu.Unlock()
	}()
	var out []sent
	for _, s := range sessions {
		st, err := p.stateOf(ctx, s)
		if err != nil {
			p.log.Warn("fleet: the stream's last event of a session is unknown; will retry", "session", s, "err", err)
			p.mark(s)
			failed = true
			continue
		}
		if st.fenced {
			continue
		}
		more, err := p.publishSession(ctx, s, st, &out)
		if err != nil {
			p.mark(s)
			failed = true
		} else if more {
			p.mark(s)
		}
	}
	return p.settle(ctx, out) || failed
}

// stateOf is what the stream holds of session, read from it the first
// time (a restarted runner, a session taken over).
func (p *publisher) stateOf(ctx context.Context, session string) (*pubState, error) {
	p.mu.Lock()
	st := p.state[session]
	p.mu.Unlock()
	if st != nil && st.known {
		return st, nil
	}
	seq, streamSeq, _, err := p.f.lastEvent(ctx, session)
	if err != nil {
		return nil, err
	}
	st = &pubState{seq: seq, streamSeq: streamSeq, known: true, clean: true}
	p.mu.Lock()
	p.state[session] = st
	p.mu.Unlock()
	return st, nil
}

// publishSession sends session's events after the stream's last, at most
// maxRound of them; more says there were more.
func (p *publisher) publishSession(ctx context.Context, session string, st *pubState, out *[]sent) (more bool, err error) {
	n := 0
	subject := eventSubject(session)
	for ev, err := range p.local.Read(ctx, session, st.seq) {
		if err != nil {
			return false, err
		}
		if n == maxRound {
			return true, nil
		}
		m := &nats.Msg{Subject: subject, Data: ev.Payload, Header: nats.Header{}}
		seq := strconv.FormatUint(ev.Seq, 10)
		m.Header.Set(seqHeader, seq)
		m.Header.Set(runnerHeader, p.f.cfg.Name)
		opts := []jetstream.PublishOpt{jetstream.WithMsgID(session + ":" + seq)}
		if n == 0 && st.clean {
			// Fences out a second writer: the stream must end where this
			// runner left it.
			opts = append(opts, jetstream.WithExpectLastSequencePerSubject(st.streamSeq))
		}
		fut, err := p.f.js.PublishMsgAsync(m, opts...)
		if err != nil {
			return false, err
		}
		*out = append(*out, sent{session: session, seq: ev.Seq, fut: fut})
		n++
	}
	return false, nil
}

// settle waits for the acks of a round and moves each session's mark to
// its last event acked without a gap before it.
func (p *publisher) settle(ctx context.Context, out []sent) (failed bool) {
	broken := map[string]bool{}
	for _, s := range out {
		var ack *jetstream.PubAck
		var err error
		select {
		case ack = <-s.fut.Ok():
		case err = <-s.fut.Err():
		case <-ctx.Done():
			return true
		}
		p.mu.Lock()
		st := p.state[s.session]
		p.mu.Unlock()
		if broken[s.session] || st == nil {
			continue
		}
		if err != nil {
			broken[s.session] = true
			failed = true
			p.failed(ctx, s, st, err)
			continue
		}
		p.mu.Lock()
		st.seq, st.streamSeq, st.clean = s.seq, ack.Sequence, true
		p.mu.Unlock()
	}
	return failed
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
			p.mu.Unlock()
			p.log.Warn("fleet: another runner now writes this session's events; this runner stops publishing them",
				"session", s.session, "writer", runner)
			return
		}
	}
	p.log.Debug("fleet: publish failed; will retry", "session", s.session, "seq", s.seq, "err", err)
	p.mu.Lock()
	st.known, st.clean = false, false // read the stream again: what landed is not sent twice
	p.mu.Unlock()
	p.mark(s.session)
}

// forget drops what the publisher keeps of a session that has ended and
// is all in the stream.
func (p *publisher) forget(session string) {
	p.mu.Lock()
	if !p.dirty[session] {
		delete(p.state, session)
	}
	p.mu.Unlock()
}

// lastEvent reads session's last event in the stream: its seq, its
// position in the stream and the runner that wrote it (zeros when the
// stream holds none).
func (f *Fleet) lastEvent(ctx context.Context, session string) (seq, streamSeq uint64, runner string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := f.events.GetLastMsgForSubject(ctx, eventSubject(session))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, 0, "", nil
	}
	if err != nil {
		return 0, 0, "", err
	}
	seq, err = strconv.ParseUint(m.Header.Get(seqHeader), 10, 64)
	if err != nil {
		return 0, 0, "", fmt.Errorf("fleet: event %d of the stream has no %s: %w", m.Sequence, seqHeader, err)
	}
	return seq, m.Sequence, m.Header.Get(runnerHeader), nil
}
