package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/nats-io/nuid"

	"github.com/tetherhq/tether/runner/sessions"
)

// remoteHolds are the holds other runners keep on this runner's sessions
// for hosts attached through them (protocol v1's): each is the local
// hold's release, with the runner it is for, so that the holds of a
// runner that is lost are let go and their sessions' grace runs.
//
// It also keeps, for forgetReleasedAfter, the ids of holds let go: a hold
// request that lands after its release (its answer was lost, and the
// holder let go of what it could not know it had) must not take a hold
// nobody will let go of.
type remoteHolds struct {
	mu       sync.Mutex
	byID     map[string]remoteHold
	released map[string]time.Time // when it was let go
}

type remoteHold struct {
	runner  string
	release func()
	at      time.Time // when it was taken
}

// releaseTimeout bounds telling a session's runner that a hold is let go.
const releaseTimeout = 10 * time.Second

// forgetReleasedAfter is how long a runner remembers a hold let go: far
// longer than a hold request can be on its way.
const forgetReleasedAfter = time.Minute

// Hold keeps a session alive for a host attached through this runner,
// wherever the session lives: its runner keeps the hold, and is told when
// it is let go.
func (c *Core) Hold(ctx context.Context, id string, grace time.Duration) (func(), error) {
	if c.isLocal(id) {
		return c.local.Hold(ctx, id, grace)
	}
	hold := nuid.Next()
	var once sync.Once
	release := func() { once.Do(func() { c.release(id, hold) }) }
	if _, err := c.remote(ctx, id, request{Op: "hold", Hold: hold, From: c.f.cfg.Name, Grace: grace}); err != nil {
		var refused *remoteError
		if !errors.As(err, &refused) || errors.Is(err, sessions.ErrRunnerGone) {
			// No answer, or the time ran out over tries of which one may
			// have reached the session's runner: the hold may have been
			// taken, its answer lost. Let it go, lest it last as long as
			// this runner.
			c.wg.Add(1)
			go func() { defer c.wg.Done(); release() }()
		}
		return nil, err
	}
	return release, nil
}

// release tells the runner of session id that hold is let go.
func (c *Core) release(id, hold string) {
	ctx, cancel := context.WithTimeout(c.ctx, releaseTimeout)
	defer cancel()
	_, err := c.remote(ctx, id, request{Op: "release", Hold: hold})
	if err != nil && ctx.Err() == nil && !errors.Is(err, sessions.ErrNotFound) { // a session gone holds nothing
		c.f.log.Warn("fleet: a session's runner not told that a host let it go", "session", id, "err", err)
	}
}

// holdFor takes a hold on a local session for a host on another runner.
func (c *Core) holdFor(ctx context.Context, req request) error {
	if req.Hold == "" || req.From == "" || req.Grace <= 0 {
		return fmt.Errorf("%w: a hold without its id, runner or grace", sessions.ErrInvalidRequest)
	}
	if c.wasReleased(req.Hold) {
		return nil // a late request: its holder let go already
	}
	release, err := c.local.Hold(ctx, req.Session, req.Grace)
	if err != nil {
		return err
	}
	c.holds.mu.Lock()
	_, lettingGo := c.holds.released[req.Hold] // let go meanwhile
	if !lettingGo {
		if c.holds.byID == nil {
			c.holds.byID = map[string]remoteHold{}
		}
		c.holds.byID[req.Hold] = remoteHold{runner: req.From, release: release, at: time.Now()}
	}
	c.holds.mu.Unlock()
	if lettingGo {
		release()
	}
	return nil
}

// wasReleased says whether hold was let go in the last forgetReleasedAfter.
func (c *Core) wasReleased(hold string) bool {
	c.holds.mu.Lock()
	defer c.holds.mu.Unlock()
	_, ok := c.holds.released[hold]
	return ok
}

// releaseFor lets go of a hold another runner took, and remembers its id.
func (c *Core) releaseFor(hold string, now time.Time) {
	c.holds.mu.Lock()
	h, ok := c.holds.byID[hold]
	delete(c.holds.byID, hold)
	if hold != "" {
		if c.holds.released == nil {
			c.holds.released = map[string]time.Time{}
		}
		c.holds.released[hold] = now
	}
	c.holds.mu.Unlock()
	if ok {
		h.release()
	}
}

// forgetReleased forgets the holds let go more than forgetReleasedAfter
// before now.
func (c *Core) forgetReleased(now time.Time) {
	c.holds.mu.Lock()
	maps.DeleteFunc(c.holds.released, func(_ string, at time.Time) bool { return now.Sub(at) > forgetReleasedAfter })
	c.holds.mu.Unlock()
}

// releaseGone lets go of the holds of runners that are lost or have left:
// their hosts' connections went with them. A runner cut off from the
// fleet judges nobody (see cutOff).
func (c *Core) releaseGone() {
	c.reg.mu.RLock()
	cut := c.cutOff()
	c.reg.mu.RUnlock()
	if cut {
		return
	}
	c.holds.mu.Lock()
	var gone []func()
	for id, h := range c.holds.byID {
		if c.runnerGone(h.runner, h.at) {
			gone = append(gone, h.release)
			delete(c.holds.byID, id)
		}
	}
	c.holds.mu.Unlock()
	for _, release := range gone {
		release()
	}
}

// runnerGone says whether a runner that took a hold at `at` is lost, has
// left, or is still unknown LostAfter later (a runner that has just joined
// may take a hold before its first heartbeat arrives).
func (c *Core) runnerGone(name string, at time.Time) bool {
	c.reg.mu.RLock()
	defer c.reg.mu.RUnlock()
	r, ok := c.reg.runners[name]
	if !ok {
		return time.Since(at) > c.f.cfg.LostAfter
	}
	return r.State == stateLeft || c.lost(r)
}
