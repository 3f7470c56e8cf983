package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/sessions"
)

// Core is the session core of a runner in a fleet: the runner's own
// sessions.Manager for the sessions it owns, and the fleet for the rest.
// Every front end takes it as its sessions.Core.
type Core struct {
	f        *Fleet
	local    *sessions.Manager
	agents   []string // the local core's agent kinds, sorted: they do not change
	reg      *registry
	draining atomic.Bool
	beat     chan struct{}

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	answers answers
	sub     *nats.Subscription // commands for this runner and its sessions
	hb      *nats.Subscription // heartbeats

	holds  remoteHolds  // other runners' holds on this one's sessions
	pacers remotePacers // and their readers' pacers
}

var (
	_ sessions.Core  = (*Core)(nil)
	_ sessions.Fleet = (*Core)(nil)
)

// Serve puts the runner's session core into the fleet: it starts the
// publisher, the registries' watches, the heartbeat, the watch for lost
// runners, and the subject other runners send this one's commands to.
// local must have been opened on f.Log and f.Observer.
func (f *Fleet) Serve(ctx context.Context, local *sessions.Manager) (_ *Core, err error) {
	if f.pub == nil {
		return nil, errors.New("fleet: the session core was not opened on the fleet's log")
	}
	c := &Core{f: f, local: local, agents: slices.Sorted(maps.Keys(local.Agents())), reg: newRegistry(), beat: make(chan struct{}, 1)}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	readies := make([]chan struct{}, 3)
	for i, w := range []struct {
		kv    jetstream.KeyValue
		apply func(jetstream.KeyValueEntry)
	}{{f.sessions, c.reg.applySession}, {f.runners, c.reg.applyRunner}, {f.approvals, c.reg.applyApproval}} {
		readies[i] = make(chan struct{})
		if err := watch(c.ctx, w.kv, w.apply, readies[i]); err != nil {
			return nil, err
		}
	}
	wait, cancel := context.WithTimeout(ctx, f.cfg.ConnectTimeout)
	defer cancel()
	for _, r := range readies {
		select {
		case <-r:
		case <-wait.Done():
			return nil, fmt.Errorf("fleet: reading the registries: %w", wait.Err())
		}
	}
	if c.hb, err = f.nc.Subscribe(heartbeatSubjects, c.hear); err != nil {
		return nil, fmt.Errorf("fleet: listening to the runners' heartbeats: %w", err)
	}
	if err := c.heartbeat(wait, c.self()); err != nil {
		return nil, fmt.Errorf("fleet: joining the runner registry: %w", err)
	}
	if c.sub, err = c.serveRPC(c.ctx); err != nil {
		return nil, fmt.Errorf("fleet: taking commands: %w", err)
	}
	for _, run := range []func(context.Context){f.pub.run, c.writeOutbox, c.beatLoop, c.watchLost} {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); run(c.ctx) }()
	}
	// Sessions the runner had before it joined (its restart) reach the
	// stream and the registry too.
	for _, info := range local.List() {
		f.pub.mark(info.ID, 0)
		f.out.session(info.ID)
	}
	return c, nil
}

// Leave leaves the fleet after the runner's sessions have shut down: what
// they logged reaches the stream and the registry (until ctx ends), the
// runner leaves the registry, so nobody takes it for lost, and every
// goroutine of the fleet's ends.
func (c *Core) Leave(ctx context.Context) error {
	if c.sub != nil {
		_ = c.sub.Unsubscribe()
	}
	err := errors.Join(c.f.pub.Sync(ctx), c.f.out.sync(ctx), c.leave(ctx))
	c.stop()
	return err
}

func (c *Core) stop() {
	if c.hb != nil {
		_ = c.hb.Unsubscribe()
	}
	if c.sub != nil {
		_ = c.sub.Unsubscribe()
	}
	c.cancel()
	c.wg.Wait()
}

// Sync waits until everything this runner logged is in the stream and
// the registries.
func (c *Core) Sync(ctx context.Context) error {
	return errors.Join(c.f.pub.Sync(ctx), c.f.out.sync(ctx))
}

// Name is this runner's name in the fleet.
func (c *Core) Name() string { return c.f.cfg.Name }

// isLocal says whether this runner owns session id.
func (c *Core) isLocal(id string) bool {
	info, err := c.local.Get(id)
	return err == nil && !c.cededInfo(info)
}

// remote runs a command of a session that is not this runner's on the
// runner that owns it. Nobody owning it is the local core's answer (not
// found), unless the registry knows the session: then its runner is
// away, and the command waits for it.
func (c *Core) remote(ctx context.Context, id string, req request) (reply, error) {
	req.Session = id
	r, err := c.f.call(ctx, func(ctx context.Context, fresh bool) (string, error) { return c.ownerSubject(ctx, id, fresh) }, req)
	if errors.Is(err, errNoOwner) {
		return reply{}, fmt.Errorf("%w: %s", sessions.ErrNotFound, id)
	}
	return r, err
}

func (c *Core) Agents() map[string]agent.Capabilities { return c.local.Agents() }
func (c *Core) Unavailable() map[string]string        { return c.local.Unavailable() }
func (c *Core) ShuttingDown() bool                    { return c.local.ShuttingDown() }

// Create places the session (see place) and starts it there.
func (c *Core) Create(ctx context.Context, req sessions.CreateRequest) (sessions.Info, error) {
	runner, err := c.place(req)
	if err != nil {
		return sessions.Info{}, err
	}
	if runner == c.f.cfg.Name {
		return c.createLocal(ctx, req)
	}
	r, err := c.f.call(ctx, to(rpcSubject(runner)), request{Op: "create", Create: fromCore(req)})
	if err != nil {
		return sessions.Info{}, err
	}
	if r.Info == nil {
		return sessions.Info{}, fmt.Errorf("fleet: runner %s created a session without saying which", runner)
	}
	c.reg.remember(*r.Info)
	return *r.Info, nil
}

func (c *Core) createLocal(ctx context.Context, req sessions.CreateRequest) (sessions.Info, error) {
	if c.draining.Load() {
		return sessions.Info{}, fmt.Errorf("%w (%s)", sessions.ErrDraining, c.f.cfg.Name)
	}
	info, err := c.local.Create(ctx, req)
	if err != nil {
		return info, err
	}
	info.Runner = c.f.cfg.Name
	c.f.out.session(info.ID)
	c.heartbeatNow()
	return info, nil
}

// place picks the runner of a new session: the one the request names, or
// among the runners that offer its agent, are active and have room, the
// least loaded.
func (c *Core) place(req sessions.CreateRequest) (string, error) {
	c.reg.mu.Lock()
	defer c.reg.mu.Unlock()
	if req.Runner != "" {
		r, ok := c.reg.runners[req.Runner]
		switch {
		case !ok || c.lost(r) || r.State == stateLeft:
			return "", fmt.Errorf("%w: %q", sessions.ErrNoRunner, req.Runner)
		case r.State == sessions.RunnerDraining:
			return "", fmt.Errorf("%w (%s)", sessions.ErrDraining, req.Runner)
		}
		c.reg.placed[req.Runner]++
		return req.Runner, nil
	}
	if req.Native && c.canTake(req.Agent) {
		// A native client (protocol v1) is attached to this runner: its
		// agent's every line flows to it, best without another hop.
		c.reg.placed[c.f.cfg.Name]++
		return c.f.cfg.Name, nil
	}
	var best *sessions.Runner
	bestLoad := 0.0
	offered := false
	for _, name := range slices.Sorted(maps.Keys(c.reg.runners)) {
		e := c.reg.runners[name]
		if c.lost(e) || !slices.Contains(e.Agents, req.Agent) {
			continue
		}
		offered = true
		n := e.Sessions + c.reg.placed[name]
		if e.State != sessions.RunnerActive || (e.MaxSessions > 0 && n >= e.MaxSessions) {
			continue
		}
		load := loadOf(n, e.MaxSessions)
		if best == nil || load < bestLoad {
			r := e.Runner
			best, bestLoad = &r, load
		}
	}
	switch {
	case best != nil:
		c.reg.placed[best.Name]++
		return best.Name, nil
	case !offered:
		if _, ok := c.local.Agents()[req.Agent]; ok || req.Agent == "" {
			return c.f.cfg.Name, nil // let the local core answer
		}
		return "", fmt.Errorf("%w: no runner of the fleet offers %q", sessions.ErrUnknownAgent, req.Agent)
	}
	return "", fmt.Errorf("%w: every runner that offers %q is full or draining", sessions.ErrTooManySessions, req.Agent)
}

// canTake says whether this runner offers agent kind and has room for a
// session of it. Under c.reg.mu.
func (c *Core) canTake(kind string) bool {
	if _, ok := c.local.Agents()[kind]; !ok || c.draining.Load() {
		return false
	}
	me, ok := c.reg.runners[c.f.cfg.Name]
	return !ok || me.MaxSessions == 0 || me.Sessions+c.reg.placed[c.f.cfg.Name] < me.MaxSessions
}

func loadOf(sessions, max int) float64 {
	if max > 0 {
		return float64(sessions) / float64(max)
	}
	return float64(sessions)
}

func (c *Core) Reopen(ctx context.Context, id string, lastSeq uint64, relay bool) (sessions.Info, error) {
	if c.isLocal(id) {
		info, err := c.local.Reopen(ctx, id, lastSeq, relay)
		if err == nil {
			info.Runner = c.f.cfg.Name
			c.f.out.session(id)
		}
		return info, err
	}
	if s, ok := c.reg.session(id); ok && (s.Cause == agent.ReasonRunnerLost || c.runnerLost(s.Runner)) {
		return c.adoptRetrying(ctx, s, nil)
	}
	r, err := c.remote(ctx, id, request{Op: "reopen", LastSeq: lastSeq, Relay: relay})
	if err != nil {
		return sessions.Info{}, err
	}
	return *r.Info, nil
}

var _ sessions.MCPReopener = (*Core)(nil)

// ReopenWithMCP is Reopen with other MCP servers: here, or as a take-over
// of a lost runner's session (the servers are not kept where another
// runner can read them, so a take-over starts without them unless they
// are given again). A session of another runner that is up is reopened
// there: its servers would have to cross NATS, which carries no client's
// secrets, so it is refused with the runner to ask.
func (c *Core) ReopenWithMCP(ctx context.Context, id string, lastSeq uint64, relay bool, servers []agent.MCPServer) (sessions.Info, error) {
	if c.isLocal(id) {
		info, err := c.local.ReopenWithMCP(ctx, id, lastSeq, relay, servers)
		if err == nil {
			info.Runner = c.f.cfg.Name
			c.f.out.session(id)
		}
		return info, err
	}
	s, ok := c.reg.session(id)
	if ok && (s.Cause == agent.ReasonRunnerLost || c.runnerLost(s.Runner)) {
		// Checked before the session is claimed: a refused take-over
		// leaves it to be taken over again.
		if err := agent.CheckMCPServers(s.Agent, c.local.Agents()[s.Agent].MCP, servers); err != nil {
			return sessions.Info{}, err
		}
		return c.adoptRetrying(ctx, s, servers)
	}
	if !ok {
		return sessions.Info{}, fmt.Errorf("%w: %s", sessions.ErrNotFound, id)
	}
	return sessions.Info{}, fmt.Errorf("%w: session %s lives on runner %s: resume it there to give it MCP servers (a client's servers do not cross the fleet)",
		sessions.ErrInvalidRequest, id, s.Runner)
}

// Get answers from this runner's core, or asks the session's runner (its
// seq and state now, not as the registry last heard), or, when that
// runner does not answer, the registry.
func (c *Core) Get(id string) (sessions.Info, error) {
	if info, err := c.local.Get(id); err == nil && !c.cededInfo(info) {
		info.Runner = c.f.cfg.Name
		return info, nil
	}
	info, err := c.ask(id)
	if err == nil {
		return info, nil
	}
	if s, ok := c.reg.session(id); ok {
		return s.Info, nil
	}
	return sessions.Info{}, err
}

// ask asks the runner that owns session id for it: the registry may not
// list it yet (its runner's write waits for the bucket), or list it as it
// was.
func (c *Core) ask(id string) (sessions.Info, error) {
	ctx, cancel := context.WithTimeout(c.ctx, attemptTimeout)
	defer cancel()
	r, err := c.remote(ctx, id, request{Op: "get"})
	switch {
	case errors.Is(err, errNoOwner), errors.Is(err, sessions.ErrRunnerGone):
		return sessions.Info{}, fmt.Errorf("%w: %s", sessions.ErrNotFound, id)
	case err != nil:
		return sessions.Info{}, err
	}
	c.reg.remember(*r.Info)
	return *r.Info, nil
}

// List is every session of the fleet: this runner's as it has them, the
// others' as the registry does.
func (c *Core) List() []sessions.Info {
	local := slices.DeleteFunc(c.local.List(), c.cededInfo)
	seen := make(map[string]bool, len(local))
	for i := range local {
		local[i].Runner = c.f.cfg.Name
		seen[local[i].ID] = true
	}
	c.reg.mu.RLock()
	for id, s := range c.reg.sessions {
		if !seen[id] {
			local = append(local, s.Info)
		}
	}
	c.reg.mu.RUnlock()
	slices.SortFunc(local, func(a, b sessions.Info) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return local
}

// route runs a command on the session's owner: here, or by request.
func (c *Core) route(ctx context.Context, id string, here func() error, req request) (reply, error) {
	if c.isLocal(id) {
		return reply{}, here()
	}
	return c.remote(ctx, id, req)
}

func (c *Core) Close(ctx context.Context, id string) error {
	_, err := c.route(ctx, id, func() error { return c.local.Close(ctx, id) }, request{Op: "close"})
	return err
}

func (c *Core) Prompt(ctx context.Context, id string, p agent.Prompt) error {
	_, err := c.route(ctx, id, func() error { return c.local.Prompt(ctx, id, p) }, request{Op: "prompt", Prompt: &p})
	return err
}

func (c *Core) Steer(ctx context.Context, id string, p agent.Prompt) error {
	_, err := c.route(ctx, id, func() error { return c.local.Steer(ctx, id, p) }, request{Op: "steer", Prompt: &p})
	return err
}

func (c *Core) Configure(ctx context.Context, id string, set agent.Settings) (sessions.Info, error) {
	var info sessions.Info
	r, err := c.route(ctx, id, func() (err error) {
		info, err = c.local.Configure(ctx, id, set)
		info.Runner = c.f.cfg.Name
		return err
	}, request{Op: "configure", Settings: &set})
	if r.Info != nil {
		info = *r.Info
	}
	return info, err
}

func (c *Core) Interrupt(ctx context.Context, id string) error {
	_, err := c.route(ctx, id, func() error { return c.local.Interrupt(ctx, id) }, request{Op: "interrupt"})
	return err
}

func (c *Core) Input(ctx context.Context, id string, n uint64, line []byte) error {
	_, err := c.route(ctx, id, func() error { return c.local.Input(ctx, id, n, line) }, request{Op: "input", N: n, Line: line})
	return err
}

func (c *Core) Control(ctx context.Context, id, subtype string, params json.RawMessage) (json.RawMessage, error) {
	var out json.RawMessage
	r, err := c.route(ctx, id, func() (err error) { out, err = c.local.Control(ctx, id, subtype, params); return err },
		request{Op: "control", Subtype: subtype, Params: params})
	if r.Raw != nil {
		out = r.Raw
	}
	return out, err
}

func (c *Core) Resolve(ctx context.Context, sessionID string, res agent.Resolution) (agent.Resolution, error) {
	var won agent.Resolution
	r, err := c.route(ctx, sessionID, func() (err error) { won, err = c.local.Resolve(ctx, sessionID, res); return err },
		request{Op: "resolve", Resolution: &res})
	if r.Resolution != nil {
		won = *r.Resolution
	}
	return won, err
}

func (c *Core) Messages(ctx context.Context, id string) ([]agent.Item, error) {
	var items []agent.Item
	r, err := c.route(ctx, id, func() (err error) { items, err = c.local.Messages(ctx, id); return err }, request{Op: "messages"})
	if r.Items != nil {
		items = r.Items
	}
	return items, err
}

func (c *Core) Diff(ctx context.Context, id string) ([]agent.FileChange, error) {
	var changes []agent.FileChange
	r, err := c.route(ctx, id, func() (err error) { changes, err = c.local.Diff(ctx, id); return err }, request{Op: "diff"})
	if r.Changes != nil {
		changes = r.Changes
	}
	return changes, err
}

// Events reads a session of this runner from its own log, any other from
// the fleet's stream.
func (c *Core) Events(ctx context.Context, id string, after uint64) iter.Seq2[agent.Event, error] {
	if !c.elsewhere(id) {
		return c.local.Events(ctx, id, after) // this runner's, or not found
	}
	return c.f.streamEvents(ctx, id, after)
}

// elsewhere says whether session id lives on another runner of the
// fleet.
func (c *Core) elsewhere(id string) bool {
	if c.isLocal(id) {
		return false
	}
	if _, ok := c.reg.session(id); ok {
		return true
	}
	_, err := c.ask(id)
	return err == nil
}

// EventGroups: a session elsewhere comes in groups of what the stream
// had ready together.
func (c *Core) EventGroups(ctx context.Context, id string, after uint64, max int) iter.Seq2[[]agent.Event, error] {
	if !c.elsewhere(id) {
		return c.local.EventGroups(ctx, id, after, max)
	}
	return func(yield func([]agent.Event, error) bool) {
		for e, err := range c.f.streamEvents(ctx, id, after) {
			if !yield([]agent.Event{e}, err) || err != nil {
				return
			}
		}
	}
}

// Approvals lists the fleet's pending approvals: this runner's from its
// store, the others' from the fleet's bucket.
func (c *Core) Approvals() ([]approvals.Record, error) {
	out, err := c.local.Approvals()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, r := range out {
		seen[r.Approval.ID] = true
	}
	c.reg.mu.RLock()
	for _, a := range c.reg.approvals {
		if a.Pending() && !seen[a.Approval.ID] {
			if s, ok := c.reg.sessions[a.Approval.SessionID]; ok && s.Runner != c.f.cfg.Name && s.State != sessions.StateEnded {
				out = append(out, a.Record)
			}
		}
	}
	c.reg.mu.RUnlock()
	slices.SortFunc(out, func(a, b approvals.Record) int { return a.Approval.Created.Compare(b.Approval.Created) })
	return out, nil
}

// Runners lists the fleet's runners, lost ones as lost.
func (c *Core) Runners(context.Context) ([]sessions.Runner, error) {
	c.reg.mu.RLock()
	defer c.reg.mu.RUnlock()
	out := make([]sessions.Runner, 0, len(c.reg.runners))
	for _, e := range c.reg.runners {
		r := e.Runner
		if r.State == stateLeft {
			continue
		}
		if c.lost(e) {
			r.State = sessions.RunnerLost
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b sessions.Runner) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// Drain stops new placements on runner (or lets them in again).
func (c *Core) Drain(ctx context.Context, runner string, drain bool) error {
	if runner == c.f.cfg.Name {
		c.draining.Store(drain)
		c.heartbeatNow()
		return nil
	}
	c.reg.mu.RLock()
	_, ok := c.reg.runners[runner]
	c.reg.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: %q", sessions.ErrNoRunner, runner)
	}
	_, err := c.f.call(ctx, to(rpcSubject(runner)), request{Op: "drain", Drain: drain})
	return err
}

// learn puts an entry read from the bucket into the view, unless the
// watch has brought a newer one meanwhile.
func (r *registry) learn(s sessionRev) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now, ok := r.sessions[s.ID]; !ok || now.rev < s.rev {
		r.sessions[s.ID] = s
	}
}

// remember puts a session another runner just created into the view, so
// the next command finds its owner before the registry's watch does.
func (r *registry) remember(info sessions.Info) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.sessions[info.ID]; !ok {
		r.sessions[info.ID] = sessionRev{sessionEntry: sessionEntry{Info: info}, at: time.Now()}
	}
}
