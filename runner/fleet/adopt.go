package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

// adopt takes over, on this runner, a session whose runner was lost and
// whose end the fleet wrote: its history is copied from the stream into
// this runner's log, and its agent resumes the conversation through its
// native resume, which finds it only when the workspaces and the agents'
// homes are on storage this runner reaches too. The session keeps its id
// and its seq goes on. Of runners that try at once, the one whose claim
// the registry takes does it.
func (c *Core) adopt(ctx context.Context, s sessionRev, servers []agent.MCPServer) (sessions.Info, error) {
	id := s.ID
	if c.draining.Load() {
		return sessions.Info{}, fmt.Errorf("%w (%s)", sessions.ErrDraining, c.f.cfg.Name)
	}
	if _, ok := c.local.Agents()[s.Agent]; !ok {
		return sessions.Info{}, fmt.Errorf("%w: %s is not offered by runner %s", sessions.ErrUnknownAgent, s.Agent, c.f.cfg.Name)
	}
	// An earlier try's claim that landed though its answer did not.
	mine := s.Runner == c.f.cfg.Name
	if !mine && s.Cause != agent.ReasonRunnerLost {
		// Asked before the fleet ended it: end it now (once for the
		// fleet, whoever writes it), and go on from the registry's entry.
		lostRunner := s.Runner
		if err := c.endLost(ctx, s); err != nil {
			return sessions.Info{}, err
		}
		var err error
		if s, err = c.entryOf(ctx, id); err != nil {
			return sessions.Info{}, err
		}
		switch {
		case s.Cause == agent.ReasonRunnerLost:
		case s.Runner == lostRunner:
			// The end is in the stream; the runner that wrote it has yet
			// to mark the registry.
			return sessions.Info{}, fmt.Errorf("%w: %s", errEndPending, id)
		default:
			return sessions.Info{}, fmt.Errorf("%w: %s: another runner is taking it over", sessions.ErrLive, id)
		}
	}
	history, err := c.history(ctx, id)
	if err != nil {
		return sessions.Info{}, err
	}
	lost, rev := s.sessionEntry, s.rev
	if mine {
		lost.Runner, lost.State, lost.Cause = "", sessions.StateEnded, agent.ReasonRunnerLost
	} else if rev, err = c.claim(ctx, s); err != nil {
		return sessions.Info{}, err
	}
	last := history[len(history)-1]
	c.f.pub.adopt(id, uint64(last.Seq), last.pos)
	a := sessions.Adoption{Info: s.Info, MCPServers: servers}
	if c.f.cfg.ResumeOptions != nil {
		a.Options = c.f.cfg.ResumeOptions(s.Agent, turnsOf(history))
	}
	info, err := c.local.Adopt(ctx, a, events(history))
	if err != nil {
		c.f.pub.forget(id)
		c.giveBack(lost, rev)
		return sessions.Info{}, err
	}
	info.Runner = c.f.cfg.Name
	c.f.out.session(id)
	c.heartbeatNow()
	return info, nil
}

// adoptRetrying is adopt, tried again while the stream or the registry
// does not answer: a lost runner's NATS node may have led them, and the
// others elect new leaders within seconds.
func (c *Core) adoptRetrying(ctx context.Context, s sessionRev, servers []agent.MCPServer) (sessions.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, adoptTimeout)
	defer cancel()
	for {
		info, err := c.adopt(ctx, s, servers)
		if !unanswered(err) || ctx.Err() != nil {
			return info, err
		}
		c.f.log.Debug("fleet: take-over waits for the stream", "session", s.ID, "err", err)
		select {
		case <-ctx.Done():
			return info, err
		case <-time.After(250 * time.Millisecond):
		}
		if fresh, ok := c.reg.session(s.ID); ok {
			s = fresh
		}
	}
}

// errEndPending: a lost session's end is written, and its registry
// entry not yet.
var errEndPending = errors.New("fleet: the lost session's end is not in the registry yet")

// adoptTimeout bounds a take-over's wait for the stream's leaders.
const adoptTimeout = 30 * time.Second

// unanswered says whether err is NATS not answering in time (no leader
// yet, no responders), which a later try may not meet.
func unanswered(err error) bool {
	return errors.Is(err, errEndPending) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoHeartbeat)
}

// runnerLost says whether runner name stopped heartbeating, as far as
// this runner, not cut off itself, can tell.
func (c *Core) runnerLost(name string) bool {
	c.reg.mu.RLock()
	defer c.reg.mu.RUnlock()
	if name == "" || name == c.f.cfg.Name || c.cutOff() {
		return false
	}
	r, ok := c.reg.runners[name]
	return !ok || c.lost(r)
}

// entryOf reads session id's registry entry from the bucket itself (this
// runner's watch may not have it yet).
func (c *Core) entryOf(ctx context.Context, id string) (sessionRev, error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	e, err := c.f.sessions.Get(ctx, token(id))
	if err != nil {
		return sessionRev{}, fmt.Errorf("fleet: reading session %s: %w", id, err)
	}
	var s sessionEntry
	if err := json.Unmarshal(e.Value(), &s); err != nil {
		return sessionRev{}, fmt.Errorf("fleet: reading session %s: %w", id, err)
	}
	return sessionRev{s, e.Revision(), time.Now()}, nil
}

// claim writes this runner into session s's registry entry, over the
// revision the lost runner's end left: of runners that try at once, one
// succeeds. A replicated bucket also refuses a write while another to the
// same entry is in flight, one that may fail too: a claim refused while
// the entry is still at its revision is tried again.
func (c *Core) claim(ctx context.Context, s sessionRev) (uint64, error) {
	claim := s.sessionEntry
	claim.Runner, claim.State, claim.Cause, claim.TurnID = c.f.cfg.Name, sessions.StateIdle, "", ""
	for attempt := 1; ; attempt++ {
		rev, err := c.putEntry(ctx, claim, s.rev)
		if err == nil {
			return rev, nil
		}
		if !revisionConflict(err) {
			return 0, fmt.Errorf("fleet: claiming session %s: %w", s.ID, err)
		}
		now, rerr := c.entryOf(ctx, s.ID)
		if rerr != nil || now.rev != s.rev || attempt == claimAttempts {
			return 0, fmt.Errorf("%w: %s: another runner is taking it over", sessions.ErrLive, s.ID)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(claimRetry):
		}
	}
}

// claimAttempts and claimRetry: how often, and how soon, a claim that met
// only another write in flight is tried again.
const (
	claimAttempts = 5
	claimRetry    = 20 * time.Millisecond
)

// storedEvent is an event of the stream with its position there.
type storedEvent struct {
	agent.Event
	pos uint64
}

// history reads session id's events from the stream, to its end.
func (c *Core) history(ctx context.Context, id string) ([]storedEvent, error) {
	seq, pos, _, err := c.f.lastEvent(ctx, id)
	if err != nil {
		return nil, err
	}
	if seq == 0 {
		return nil, fmt.Errorf("%w: %s: the stream holds none of its events", sessions.ErrNotAdoptable, id)
	}
	var out []storedEvent
	for e, err := range c.f.streamEvents(ctx, id, 0) {
		if err != nil {
			return nil, err
		}
		out = append(out, storedEvent{Event: e})
		if uint64(e.Seq) >= seq {
			break
		}
	}
	if len(out) == 0 || uint64(out[len(out)-1].Seq) != seq {
		return nil, fmt.Errorf("%w: %s: its history in the stream ends before seq %d", sessions.ErrNotAdoptable, id, seq)
	}
	out[len(out)-1].pos = pos
	return out, nil
}

func events(history []storedEvent) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for _, e := range history {
			if !yield(e.Event, nil) {
				return
			}
		}
	}
}

// turnsOf counts the turns a history started.
func turnsOf(history []storedEvent) int {
	n := 0
	for _, e := range history {
		if e.Kind == agent.KindTurnStarted {
			n++
		}
	}
	return n
}

// giveBack returns a claim that came to nothing to the lost runner's
// entry, so that another runner may take the session over.
func (c *Core) giveBack(lost sessionEntry, rev uint64) {
	ctx, cancel := context.WithTimeout(c.ctx, attemptTimeout)
	defer cancel()
	if _, err := c.putEntry(ctx, lost, rev); err != nil {
		c.f.log.Warn("fleet: a session could not be given back after a failed take-over", "session", lost.ID, "err", err)
	}
}
