package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nuid"

	"github.com/tetherhq/tether/runner/sessions"
)

// A reader that paces a session on another runner (a protocol v1 host
// attached through this one) tells the session's runner how far it has
// sent on, and that runner keeps a local pacer at that seq. Its word
// comes every paceStep events it sends on, one request at a time, and at
// least every paceRefresh; a runner lets go of a pacer it has not heard
// from in paceLease, or whose reader's runner is lost, so that a reader
// that went away without a word holds nothing back.
const (
	paceStep    = 32 // far less than the window a pacer may be behind (192)
	paceRefresh = 2 * time.Second
	paceLease   = 5 * paceRefresh
)

// Pace paces this runner's sessions with a local pacer, and a session on
// another runner with one there, which this runner keeps told.
func (c *Core) Pace(id string, after uint64) (sessions.Pacing, error) {
	if !c.elsewhere(id) {
		return c.local.Pace(id, after)
	}
	p := &remotePacer{c: c, session: id, pace: nuid.Next(), moved: make(chan struct{}, 1), done: make(chan struct{})}
	p.sent.Store(after)
	switch err := p.tell(after); {
	case errors.Is(err, sessions.ErrNotFound):
		return nil, err
	case err != nil: // its runner is slow to answer: the refresh tries again
		c.f.log.Debug("fleet: a session's runner not told of its pacer yet", "session", id, "err", err)
	}
	c.wg.Add(1)
	go func() { defer c.wg.Done(); p.run() }()
	return p, nil
}

// remotePacer is a reader's pacing of a session on another runner.
type remotePacer struct {
	c       *Core
	session string
	pace    string // its id on the session's runner
	sent    atomic.Uint64
	moved   chan struct{} // capacity 1
	done    chan struct{}
	once    sync.Once
}

func (p *remotePacer) Sent(seq uint64) {
	p.sent.Store(seq)
	select {
	case p.moved <- struct{}{}:
	default:
	}
}

// Close ends the pacing; run tells the session's runner, which otherwise
// lets go of it after paceLease.
func (p *remotePacer) Close() { p.once.Do(func() { close(p.done) }) }

// run tells the session's runner where the reader is, until Close.
func (p *remotePacer) run() {
	t := time.NewTicker(paceRefresh)
	defer t.Stop()
	told := p.sent.Load()
	for {
		select {
		case <-p.done:
			p.untell()
			return
		case <-p.c.ctx.Done():
			return
		case <-t.C:
		case <-p.moved:
			if p.sent.Load() < told+paceStep {
				continue
			}
		}
		seq := p.sent.Load()
		if err := p.tell(seq); err != nil {
			p.c.f.log.Debug("fleet: a session's runner not told where its pacer is", "session", p.session, "err", err)
			continue
		}
		told = seq
	}
}

// tell sends the reader's seq; the first word opens the pacer there.
func (p *remotePacer) tell(seq uint64) error {
	ctx, cancel := context.WithTimeout(p.c.ctx, attemptTimeout)
	defer cancel()
	_, err := p.c.remote(ctx, p.session, request{Op: "pace", Pace: p.pace, From: p.c.f.cfg.Name, LastSeq: seq})
	return err
}

// untell lets go of the pacer on the session's runner.
func (p *remotePacer) untell() {
	ctx, cancel := context.WithTimeout(p.c.ctx, releaseTimeout)
	defer cancel()
	if _, err := p.c.remote(ctx, p.session, request{Op: "unpace", Pace: p.pace}); err != nil && ctx.Err() == nil {
		p.c.f.log.Debug("fleet: a session's runner not told that its pacer went", "session", p.session, "err", err)
	}
}

// remotePacers are the pacers this runner keeps for readers on other
// runners, by id, and the ids their readers let go of in the last
// paceLease: a word that comes after the reader's last (sent before it,
// retried, or slow on the way) must not open the pacer again.
type remotePacers struct {
	mu     sync.Mutex
	byID   map[string]*heldPacer
	closed map[string]time.Time // when its reader let go
}

type heldPacer struct {
	runner string
	pacer  sessions.Pacing
	heard  time.Time
}

// paceFor opens or moves a pacer of a local session for a reader on
// another runner. Both are idempotent: a retried request changes nothing.
func (c *Core) paceFor(req request, now time.Time) error {
	if req.Pace == "" || req.From == "" {
		return fmt.Errorf("%w: a pacer without its id or runner", sessions.ErrInvalidRequest)
	}
	c.pacers.mu.Lock()
	defer c.pacers.mu.Unlock()
	if _, ok := c.pacers.closed[req.Pace]; ok {
		return nil // its reader let go already
	}
	if h, ok := c.pacers.byID[req.Pace]; ok {
		h.pacer.Sent(req.LastSeq)
		h.heard = now
		return nil
	}
	pacer, err := c.local.Pace(req.Session, req.LastSeq)
	if err != nil {
		return err
	}
	if c.pacers.byID == nil {
		c.pacers.byID = map[string]*heldPacer{}
	}
	c.pacers.byID[req.Pace] = &heldPacer{runner: req.From, pacer: pacer, heard: now}
	return nil
}

// unpaceFor closes a pacer a reader on another runner let go, and keeps
// its id for paceLease so that no late word opens it again.
func (c *Core) unpaceFor(pace string, now time.Time) {
	c.pacers.mu.Lock()
	h, ok := c.pacers.byID[pace]
	delete(c.pacers.byID, pace)
	if pace != "" {
		if c.pacers.closed == nil {
			c.pacers.closed = map[string]time.Time{}
		}
		c.pacers.closed[pace] = now
	}
	c.pacers.mu.Unlock()
	if ok {
		h.pacer.Close()
	}
}

// expirePacers closes the pacers not heard from in paceLease, and those
// of runners that are gone (see releaseGone); it forgets the ids let go
// of more than paceLease ago.
func (c *Core) expirePacers(now time.Time) {
	c.pacers.mu.Lock()
	maps.DeleteFunc(c.pacers.closed, func(_ string, at time.Time) bool { return now.Sub(at) > paceLease })
	var gone []sessions.Pacing
	for id, h := range c.pacers.byID {
		if now.Sub(h.heard) > paceLease || c.runnerGone(h.runner, h.heard) {
			gone = append(gone, h.pacer)
			delete(c.pacers.byID, id)
		}
	}
	c.pacers.mu.Unlock()
	for _, p := range gone {
		p.Close()
	}
}
