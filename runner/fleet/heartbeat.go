package fleet

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/runner/sessions"
)

// heartbeatSubjects: every runner publishes its heartbeat on its own
// subject with core NATS (no stream: it needs no JetStream leader, so a
// lost NATS node does not silence it) and listens to everyone's.
const heartbeatSubjects = "tether.heartbeat.*"

// stateLeft is the last heartbeat of a runner that leaves in good order:
// nobody takes it for lost.
const stateLeft = "left"

func heartbeatSubject(runner string) string { return "tether.heartbeat." + token(runner) }

// self is this runner's entry as its heartbeat tells it. It runs every
// beat, so what it costs must not grow with the runner's sessions: an idle
// runner that allocated a list of them each second kept its collector
// running, and its heap at twice its live size.
func (c *Core) self() sessions.Runner {
	live := c.local.Live()
	state := sessions.RunnerActive
	if c.draining.Load() {
		state = sessions.RunnerDraining
	}
	return sessions.Runner{Name: c.f.cfg.Name, Addr: c.f.cfg.Addr, Agents: c.agents,
		Sessions: live, MaxSessions: c.f.cfg.MaxSessions, Load: loadOf(live, c.f.cfg.MaxSessions), State: state,
		Heartbeat: time.Now().UTC()}
}

// heartbeat tells the fleet this runner is here: on its subject, and in
// the runner registry's bucket (which lists the runners to one that
// joins, and expires the entries of runners long gone).
func (c *Core) heartbeat(ctx context.Context, r sessions.Runner) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := c.f.nc.Publish(heartbeatSubject(r.Name), data); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = c.f.runners.Put(ctx, token(r.Name), data)
	return err
}

// hear takes a runner's heartbeat, stamped with when it arrived.
func (c *Core) hear(m *nats.Msg) {
	var r sessions.Runner
	if json.Unmarshal(m.Data, &r) != nil || r.Name == "" {
		return
	}
	c.reg.mu.Lock()
	defer c.reg.mu.Unlock()
	// A runner that left stays known as left: its sessions, ended as it
	// left, are judged like a lost runner's only if they were not.
	c.reg.runners[r.Name] = runnerEntry{r, time.Now()}
	delete(c.reg.placed, r.Name)
}

// heartbeatNow asks for a heartbeat before the next tick (a new session,
// a drain).
func (c *Core) heartbeatNow() {
	select {
	case c.beat <- struct{}{}:
	default:
	}
}

func (c *Core) beatLoop(ctx context.Context) {
	t := time.NewTicker(c.f.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.beat:
		}
		if err := c.heartbeat(ctx, c.self()); err != nil && ctx.Err() == nil {
			c.f.log.Debug("fleet: heartbeat not written to the runner registry", "err", err)
		}
	}
}

// leave says goodbye: the runner's last heartbeat, and its registry entry
// removed.
func (c *Core) leave(ctx context.Context) error {
	r := c.self()
	r.State = stateLeft
	if data, err := json.Marshal(r); err == nil {
		_ = c.f.nc.Publish(heartbeatSubject(r.Name), data)
		_ = c.f.nc.FlushWithContext(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.f.runners.Delete(ctx, token(r.Name))
}
