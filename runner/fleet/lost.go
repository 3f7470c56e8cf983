package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

// lost says whether a runner's heartbeats have stopped: none heard for
// LostAfter.
func (c *Core) lost(e runnerEntry) bool {
	return time.Since(e.at) > c.f.cfg.LostAfter
}

// cutOff says whether this runner cannot judge others: its NATS link is
// down, or it has not heard its own heartbeat for LostAfter.
func (c *Core) cutOff() bool {
	me, ok := c.reg.runners[c.f.cfg.Name]
	return !c.f.nc.IsConnected() || !ok || c.lost(me)
}

// watchLost ends, once for the fleet, the sessions of runners that
// stopped heartbeating, until ctx ends. An end that could not be written
// is tried again soon rather than at the next heartbeat: it mostly waits
// for the stream's group to elect a leader after the lost runner's node,
// and the end should follow the election by milliseconds, not a second.
func (c *Core) watchLost(ctx context.Context) {
	t := time.NewTimer(c.f.cfg.Heartbeat)
	defer t.Stop()
	failing := map[string]time.Time{} // a session's end: when it first failed
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.releaseGone()
		c.forgetReleased(time.Now())
		c.expirePacers(time.Now())
		failing = c.endOrphans(ctx, c.orphans(), failing)
		next := c.f.cfg.Heartbeat
		if len(failing) > 0 {
			next = lostRetry
		}
		t.Reset(next)
	}
}

// endOrphans ends the sessions of lost runners, and returns those whose
// end could not be written, with when it first failed (failing is the
// last call's).
func (c *Core) endOrphans(ctx context.Context, orphans []sessionRev, failing map[string]time.Time) map[string]time.Time {
	still := map[string]time.Time{}
	for _, s := range orphans {
		if c.servesLive(s.ID) {
			// This runner took it over, and its view of the registry has
			// yet to hear of its own claim.
			continue
		}
		err := c.endLost(ctx, s)
		if err == nil || ctx.Err() != nil {
			continue
		}
		since, ok := failing[s.ID]
		if !ok {
			since = time.Now()
		} else if time.Since(since) > lostWarnAfter {
			c.f.log.Warn("fleet: could not end a lost runner's session; will retry", "session", s.ID, "runner", s.Runner, "err", err)
			since = time.Now()
		}
		still[s.ID] = since
	}
	return still
}

// servesLive says whether session id runs on this runner.
func (c *Core) servesLive(id string) bool {
	info, err := c.local.Get(id)
	return err == nil && info.State != sessions.StateEnded
}

// lostRetry is how soon a lost runner's session's end is tried again
// after it could not be written.
const lostRetry = 100 * time.Millisecond

// lostAttempt bounds one attempt to write a lost session's end: reading
// where the session stands from the stream's leader, and publishing.
// While the group has no leader (the lost runner's node led it) neither
// gets any answer, so a long wait would hold the end past the election;
// an attempt that timed out but landed is found by the next one.
const lostAttempt = 500 * time.Millisecond

// lostWarnAfter is how long a lost session's end may fail, as it does
// while its stream elects a leader, before each failure is logged.
const lostWarnAfter = 10 * time.Second

// orphans are the live sessions of runners that are lost, or gone from
// the runner registry altogether.
func (c *Core) orphans() []sessionRev {
	c.reg.mu.RLock()
	defer c.reg.mu.RUnlock()
	if c.cutOff() {
		return nil // the one cut off may be this runner: it judges nobody
	}
	var out []sessionRev
	for _, s := range c.reg.sessions {
		if s.State == sessions.StateEnded || s.Runner == "" || s.Runner == c.f.cfg.Name || s.rev == 0 {
			continue
		}
		if time.Since(s.at) <= c.f.cfg.LostAfter {
			// Heard of lately: its runner wrote it, or has just joined
			// and its heartbeat is still on its way.
			continue
		}
		if r, ok := c.reg.runners[s.Runner]; !ok || c.lost(r) {
			out = append(out, s)
		}
	}
	return out
}

// endLost ends session s for a lost runner: it resolves the session's
// pending approvals and writes its session.ended in the stream, both with
// the cause runner_lost, then marks it ended in the registry. The stream
// makes it once for the fleet: each event expects the one before it, so
// of runners that try at once one writes, and the others find its end.
func (c *Core) endLost(ctx context.Context, s sessionRev) error {
	now := time.Now().UTC()
	pending := c.pendingOf(s.ID)
	var events []agent.Event
	for _, a := range pending {
		res := agent.Resolution{ApprovalID: a.Approval.ID, Decision: agent.Deny, Cause: agent.CauseRunnerLost, At: now,
			Reason: "the session's runner was lost"}
		events = append(events, agent.Event{Kind: agent.KindApprovalResolved, SessionID: s.ID, Time: now, Resolution: &res})
	}
	events = append(events, agent.Event{Kind: agent.KindSessionEnded, SessionID: s.ID, Time: now,
		Session: &agent.SessionInfo{Agent: s.Agent, NativeID: s.NativeID, Reason: agent.ReasonRunnerLost},
		Error:   &agent.Error{Code: agent.ReasonRunnerLost, Message: fmt.Sprintf("the session's runner %s stopped answering", s.Runner)}})
	actx, cancel := context.WithTimeout(ctx, lostAttempt)
	wrote, err := c.appendAsFleet(actx, s, events)
	cancel()
	if err != nil {
		return err
	}
	if wrote {
		c.f.log.Warn("fleet: a runner was lost; its session is ended", "session", s.ID, "runner", s.Runner)
	}
	uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for i, a := range pending {
		rec := a.Record
		rec.Resolution = events[i].Resolution
		if data, err := json.Marshal(rec); err == nil {
			_, _ = c.f.approvals.Update(uctx, approvalKey(s.ID, a.Approval.ID), data, a.rev)
		}
	}
	entry := s.sessionEntry
	entry.State, entry.Cause, entry.TurnID = sessions.StateEnded, agent.ReasonRunnerLost, ""
	if _, err := c.putEntry(uctx, entry, s.rev); err != nil && !revisionConflict(err) {
		return err
	}
	return nil
}

// revisionConflict says whether a registry write lost to another: the
// entry was no longer at the revision it was written over. A lone server
// and a replicated bucket report it with different codes.
func revisionConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
}

// putEntry writes a session's registry entry over revision rev.
func (c *Core) putEntry(ctx context.Context, e sessionEntry, rev uint64) (uint64, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return 0, err
	}
	return c.f.sessions.Update(ctx, token(e.ID), data, rev)
}

func (c *Core) pendingOf(session string) []approvalRev {
	c.reg.mu.RLock()
	defer c.reg.mu.RUnlock()
	var out []approvalRev
	for _, a := range c.reg.approvals {
		if a.Approval.SessionID == session && a.Pending() {
			out = append(out, a)
		}
	}
	return out
}

// appendAsFleet writes events after the lost session's last in the
// stream, each expecting the one before it, so that nothing the lost
// runner may still publish interleaves. It writes nothing (wrote false)
// when the session's end is there already, or another live runner of the
// fleet is writing it.
func (c *Core) appendAsFleet(ctx context.Context, s sessionRev, events []agent.Event) (wrote bool, err error) {
	for attempt := 0; ; attempt++ {
		seq, streamSeq, writer, err := c.f.lastEvent(ctx, s.ID)
		if err != nil {
			return false, err
		}
		if c.f.endedBy(ctx, s.ID, seq) || c.takenBy(writer, s.Runner) {
			return false, nil
		}
		err = c.publishAfter(ctx, s.ID, seq, streamSeq, events)
		var apiErr *jetstream.APIError
		if err == nil || attempt == 5 || !errors.As(err, &apiErr) {
			return err == nil, err
		}
	}
}

// takenBy says whether writer, who wrote a lost session's last event, is
// another runner of the fleet that is alive: it is ending the session.
func (c *Core) takenBy(writer, owner string) bool {
	if writer == "" || writer == owner || writer == c.f.cfg.Name {
		return false
	}
	c.reg.mu.RLock()
	defer c.reg.mu.RUnlock()
	r, ok := c.reg.runners[writer]
	return ok && !c.lost(r)
}

func (c *Core) publishAfter(ctx context.Context, session string, seq, streamSeq uint64, events []agent.Event) error {
	for _, e := range events {
		seq++
		data, err := json.Marshal(e)
		if err != nil {
			return err
		}
		m := &nats.Msg{Subject: eventSubject(session), Data: data, Header: nats.Header{}}
		m.Header.Set(seqHeader, strconv.FormatUint(seq, 10))
		m.Header.Set(runnerHeader, c.f.cfg.Name)
		pctx, cancel := context.WithTimeout(ctx, ackTimeout)
		ack, err := c.f.js.PublishMsg(pctx, m, jetstream.WithMsgID(session+":"+strconv.FormatUint(seq, 10)),
			jetstream.WithExpectLastSequencePerSubject(streamSeq))
		cancel()
		if err != nil {
			return err
		}
		streamSeq = ack.Sequence
	}
	return nil
}
