package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/sessions"
)

// sessionEntry is a session in the session registry.
type sessionEntry struct {
	sessions.Info
	// Cause says why the fleet, not its runner, ended it (runner_lost).
	Cause string `json:"cause,omitempty"`
}

// runnerEntry is a runner's heartbeat, with the time this runner heard
// it (its own clock: no two runners' clocks are compared).
type runnerEntry struct {
	sessions.Runner
	at time.Time
}

// registry is this runner's view of the fleet's buckets, kept by
// watching them.
type registry struct {
	mu        sync.RWMutex
	sessions  map[string]sessionRev
	runners   map[string]runnerEntry
	approvals map[string]approvalRev
	// placed counts sessions this runner placed on each runner since
	// that runner's last heartbeat, so a burst of creates spreads.
	placed map[string]int
}

type sessionRev struct {
	sessionEntry
	rev uint64
	at  time.Time // when this runner heard of this version of it
}

type approvalRev struct {
	approvals.Record
	rev uint64
}

func newRegistry() *registry {
	return &registry{sessions: map[string]sessionRev{}, runners: map[string]runnerEntry{},
		approvals: map[string]approvalRev{}, placed: map[string]int{}}
}

// watch keeps one bucket's view until ctx ends; ready is closed once the
// bucket's current values are in.
func watch(ctx context.Context, kv jetstream.KeyValue, apply func(jetstream.KeyValueEntry), ready chan<- struct{}) error {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("fleet: watching %s: %w", kv.Bucket(), err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					if ready != nil {
						close(ready)
						ready = nil
					}
					continue
				}
				apply(e)
			}
		}
	}()
	return nil
}

func deleted(e jetstream.KeyValueEntry) bool {
	return e.Operation() == jetstream.KeyValueDelete || e.Operation() == jetstream.KeyValuePurge
}

func (r *registry) applySession(e jetstream.KeyValueEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if deleted(e) {
		delete(r.sessions, e.Key())
		return
	}
	var s sessionEntry
	if json.Unmarshal(e.Value(), &s) == nil {
		r.sessions[s.ID] = sessionRev{s, e.Revision(), time.Now()}
	}
}

func (r *registry) applyRunner(e jetstream.KeyValueEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if deleted(e) {
		delete(r.runners, e.Key())
		return
	}
	// The bucket lists the runners to one that joins; liveness comes
	// from the heartbeats heard since (Core.hear).
	var s sessions.Runner
	if json.Unmarshal(e.Value(), &s) != nil {
		return
	}
	if _, known := r.runners[s.Name]; !known {
		r.runners[s.Name] = runnerEntry{s, time.Now()}
	}
}

func (r *registry) applyApproval(e jetstream.KeyValueEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if deleted(e) {
		delete(r.approvals, e.Key())
		return
	}
	var a approvals.Record
	if json.Unmarshal(e.Value(), &a) == nil {
		r.approvals[e.Key()] = approvalRev{a, e.Revision()}
	}
}

func (r *registry) session(id string) (sessionRev, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.sessions[id]
	return s, ok
}

// outbox carries what this runner's sessions do into the registries, off
// the sessions' own goroutines: which sessions changed (written as they
// are when the writer gets to them) and approvals in the order they came.
type outbox struct {
	mu        sync.Mutex
	sessions  map[string]bool
	approvals []approvals.Record
	wake      chan struct{}
	idle      settled // when a write leaves nothing queued
	busy      bool
}

func newOutbox() *outbox {
	return &outbox{sessions: map[string]bool{}, wake: make(chan struct{}, 1)}
}

func (o *outbox) session(id string) {
	o.mu.Lock()
	o.sessions[id] = true
	o.mu.Unlock()
	o.poke()
}

func (o *outbox) approval(rec approvals.Record) {
	o.mu.Lock()
	o.approvals = append(o.approvals, rec)
	o.mu.Unlock()
	o.poke()
}

func (o *outbox) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) take() (ids []string, recs []approvals.Record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id := range o.sessions {
		ids = append(ids, id)
	}
	clear(o.sessions)
	recs, o.approvals = o.approvals, nil
	o.busy = true
	return ids, recs
}

func (o *outbox) done() {
	o.mu.Lock()
	o.busy = false
	if len(o.sessions) == 0 && len(o.approvals) == 0 {
		o.idle.broadcast()
	}
	o.mu.Unlock()
}

// sync waits until the outbox has written what it held.
func (o *outbox) sync(ctx context.Context) error {
	return o.idle.wait(ctx, &o.mu, func() bool { return !o.busy && len(o.sessions) == 0 && len(o.approvals) == 0 })
}

// observer hands what the runner's sessions log to the fleet's registries
// and on to the runner's own observer (metrics).
type observer struct {
	next sessions.Observer
	out  *outbox
}

// Observer wraps the runner's observer of its sessions; the session core
// takes it in sessions.Config.
func (f *Fleet) Observer(next sessions.Observer) sessions.Observer {
	return &observer{next: next, out: f.out}
}

func (o *observer) AgentStarted(name string, err error) {
	if o.next != nil {
		o.next.AgentStarted(name, err)
	}
}

func (o *observer) EventLogged(name string, e *agent.Event) {
	if o.next != nil {
		o.next.EventLogged(name, e)
	}
	switch e.Kind {
	case agent.KindSessionStarted, agent.KindTurnStarted, agent.KindTurnCompleted, agent.KindSessionEnded:
		o.out.session(e.SessionID)
	case agent.KindApprovalRequested:
		if e.Approval != nil {
			o.out.approval(approvals.Record{Approval: *e.Approval})
		}
	case agent.KindApprovalResolved:
		if e.Resolution != nil {
			o.out.approval(approvals.Record{Approval: agent.Approval{ID: e.Resolution.ApprovalID, SessionID: e.SessionID},
				Resolution: e.Resolution})
		}
	}
}

// writeOutbox writes what the outbox holds until ctx ends.
func (c *Core) writeOutbox(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.f.out.wake:
		}
		ids, recs := c.f.out.take()
		for _, id := range ids {
			if err := c.putSession(ctx, id); err != nil && ctx.Err() == nil {
				c.f.log.Warn("fleet: the session registry did not take a session's state; will retry", "session", id, "err", err)
				c.retryLater(ctx, func() { c.f.out.session(id) })
			}
		}
		for _, rec := range recs {
			if err := c.putApproval(ctx, rec); err != nil && ctx.Err() == nil {
				c.f.log.Warn("fleet: the approvals bucket did not take an approval; will retry", "approval", rec.Approval.ID, "err", err)
				c.retryLater(ctx, func() { c.f.out.approval(rec) })
			}
		}
		c.f.out.done()
	}
}

// retryLater queues again after a pause, so a lost link is not a busy
// loop.
func (c *Core) retryLater(ctx context.Context, again func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
			again()
		}
	}()
}

func (c *Core) putSession(ctx context.Context, id string) error {
	info, err := c.local.Get(id)
	if errors.Is(err, sessions.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	info.Runner = c.f.cfg.Name
	data, err := json.Marshal(sessionEntry{Info: info})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if prev, ok := c.reg.session(id); ok && prev.Cause != "" {
		return nil // the fleet ended it: this runner was taken for lost
	}
	if c.ceded(id) {
		return nil // and another runner took it over since
	}
	_, err = c.f.sessions.Put(ctx, token(id), data)
	if err == nil && info.State == sessions.StateEnded {
		c.f.pub.forget(id)
	}
	return err
}

// putApproval records an approval, or its resolution over the pending
// record.
func (c *Core) putApproval(ctx context.Context, rec approvals.Record) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	key := approvalKey(rec.Approval.SessionID, rec.Approval.ID)
	if rec.Resolution != nil {
		if e, err := c.f.approvals.Get(ctx, key); err == nil {
			var pending approvals.Record
			if json.Unmarshal(e.Value(), &pending) == nil {
				rec.Approval = pending.Approval
			}
		}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = c.f.approvals.Put(ctx, key, data)
	return err
}
