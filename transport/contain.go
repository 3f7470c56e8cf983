package transport

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tetherhq/tether/internal/contain"
)

// Containment is how a Command keeps what its agent starts from outliving
// the agent. In every mode the agent leads a process group of its own,
// killed as soon as the agent exits or is closed; the modes differ in what
// they catch of the processes that leave that group (setsid, double forks,
// daemons). docs/processes.md says what each one guarantees.
type Containment string

const (
	// ContainAuto picks the strongest mode this process allows: cgroup
	// when it may create cgroups under its own cgroup v2, else subreaper
	// when it is a child subreaper (EnableSubreaper), else group.
	ContainAuto Containment = ""
	// ContainGroup kills the agent's process group only.
	ContainGroup Containment = "group"
	// ContainSubreaper also kills the agent's orphans that come to this
	// process (a child subreaper), found by a marker in their environment.
	ContainSubreaper Containment = "subreaper"
	// ContainCgroup starts the agent in a cgroup v2 of its own and kills
	// the whole cgroup.
	ContainCgroup Containment = "cgroup"
)

var (
	// ErrUnknownContainment is a Containment that names no mode.
	ErrUnknownContainment = errors.New("transport: unknown containment mode")
	// ErrContainmentUnavailable is a Containment asked for that this
	// process cannot provide; the error says why.
	ErrContainmentUnavailable = errors.New("transport: containment mode not available")
)

// settleTimeout bounds how long the end of an agent waits for its killed
// descendants to be gone (they go in milliseconds unless stuck in the
// kernel, as on a hung network mount).
const settleTimeout = 5 * time.Second

// EnableSubreaper makes this process the child subreaper of everything it
// starts: an orphaned descendant is reparented to it instead of to init,
// so ContainSubreaper can find and end what an agent left behind, and the
// zombies of adopted orphans are reaped here on every SIGCHLD. It changes
// the whole process, so a library never calls it on its own: the program
// decides (cmd/tether does, in main).
//
// Children that os/exec starts keep their exit statuses: reaping takes
// only zombies that no pidfd in the process names, and Go holds one for
// each child it starts until Wait. A program that forks in another way (a
// raw syscall.ForkExec, then wait4) must not enable it. It fails where
// Go's children have no pidfds (Linux before 5.4) and off Linux.
//
// stop undoes it (orphans go to init again) and ends the reaping
// goroutine; a program that keeps it for its whole life need not call it.
func EnableSubreaper() (stop func(), err error) {
	r, err := contain.StartReaper()
	if err != nil {
		return nil, fmt.Errorf("transport: enable subreaper: %w", err)
	}
	var once sync.Once
	return func() { once.Do(r.Stop) }, nil
}

// host is what a start may use of this process. Probing it costs a few
// small /proc reads, cheap next to starting an agent, so a Command without
// a Launcher does it at every start; tests substitute it.
type host struct {
	cgroupParent func() (string, error)
	newCgroup    func(parent string) (*contain.Cgroup, error)
	subreaper    func() bool
}

func realHost() host {
	return host{cgroupParent: contain.Delegated, newCgroup: contain.NewCgroup, subreaper: contain.IsSubreaper}
}

// host returns what this Command's start may use: a Launcher looks for
// the cgroup once for all its children.
func (c *Command) host() host {
	h := realHost()
	if c.Launcher != nil {
		h.cgroupParent = c.Launcher.cgroupParent
	}
	return h
}

// fence keeps one agent's processes together and ends them.
type fence struct {
	mode   Containment
	cgroup *contain.Cgroup // cgroup mode
	marker string          // subreaper mode: MarkerVar's value
	sweep  *contain.Sweep  // subreaper mode: what kill killed, until settle
}

// choose picks the fence for one start of an agent, and says what decided.
func (h host) choose(want Containment) (f *fence, why string, err error) {
	switch want {
	case ContainGroup:
		return &fence{mode: ContainGroup}, "asked for", nil
	case ContainCgroup:
		f, why, err := h.cgroupFence()
		if err != nil {
			return nil, "", fmt.Errorf("%w: cgroup: %w", ErrContainmentUnavailable, err)
		}
		return f, why, nil
	case ContainSubreaper:
		if !h.subreaper() {
			return nil, "", fmt.Errorf("%w: subreaper: this process is not a child subreaper (see EnableSubreaper)", ErrContainmentUnavailable)
		}
		return &fence{mode: ContainSubreaper, marker: contain.NewMarker()}, "asked for", nil
	case ContainAuto:
		f, why, err := h.cgroupFence()
		if err != nil {
			f, why = h.withoutCgroup(err.Error())
		}
		return f, why, nil
	}
	return nil, "", fmt.Errorf("%w: %q (want %q, %q, %q or empty for auto)", ErrUnknownContainment, string(want),
		ContainGroup, ContainSubreaper, ContainCgroup)
}

func (h host) cgroupFence() (*fence, string, error) {
	parent, err := h.cgroupParent()
	if err != nil {
		return nil, "", err
	}
	g, err := h.newCgroup(parent)
	if err != nil {
		return nil, "", err
	}
	return &fence{mode: ContainCgroup, cgroup: g}, "a cgroup per agent under " + parent, nil
}

// withoutCgroup is auto's choice when no cgroup can be had.
func (h host) withoutCgroup(noCgroup string) (*fence, string) {
	if h.subreaper() {
		return &fence{mode: ContainSubreaper, marker: contain.NewMarker()}, noCgroup
	}
	return &fence{mode: ContainGroup}, noCgroup + "; not a child subreaper"
}

// prepare makes cmd start inside the fence.
func (f *fence) prepare(cmd *exec.Cmd) {
	switch f.mode {
	case ContainCgroup:
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, f.cgroup.FD()
	case ContainSubreaper:
		env := cmd.Env
		if env == nil {
			// What exec would give the child with Env nil.
			env = os.Environ()
			if cmd.Dir != "" {
				if pwd, err := filepath.Abs(cmd.Dir); err == nil {
					env = append(env, "PWD="+pwd)
				}
			}
		}
		// Last, so it wins over a marker inherited from an agent above us.
		cmd.Env = append(slices.Clip(env), contain.MarkerVar+"="+f.marker)
	}
}

// started is called once the agent runs; abandon when it could not start.
func (f *fence) started(cmd *exec.Cmd) {
	switch f.mode {
	case ContainCgroup:
		f.cgroup.CloseFD()
	case ContainSubreaper:
		cmd.Env = nil // the copy prepare made: not kept for the agent's life
	}
}

func (f *fence) abandon() {
	if f.cgroup != nil {
		_ = f.cgroup.Remove(settleTimeout)
	}
}

// kill ends the agent's descendants that left its group. leader is the
// agent's pid, exited; neither mode signals anything by a bare pid, so it
// may already have been reaped.
func (f *fence) kill(log *slog.Logger, leader int) {
	switch f.mode {
	case ContainCgroup:
		if err := f.cgroup.Kill(); err != nil {
			log.Warn("could not kill the agent's cgroup", "cgroup", f.cgroup.Dir, "err", err)
		}
	case ContainSubreaper:
		f.sweep = contain.KillMarked(f.marker, leader)
	}
}

// settle waits for what kill killed to be gone and releases the fence.
func (f *fence) settle(log *slog.Logger) {
	switch f.mode {
	case ContainCgroup:
		if err := f.cgroup.Remove(settleTimeout); err != nil {
			log.Warn("agent's cgroup left behind", "cgroup", f.cgroup.Dir, "err", err)
		}
	case ContainSubreaper:
		if f.sweep == nil {
			return
		}
		if n := f.sweep.Len(); n > 0 {
			log.Debug("killed what the agent left running", "processes", n)
		}
		if err := f.sweep.Settle(settleTimeout); err != nil {
			log.Warn("agent's leftover processes did not all end", "err", err)
		}
	}
}

// noteContainment logs the mode in use: through a Launcher (a runner has
// one) when it differs from the last one logged there, else per start at
// debug level.
func (c *Command) noteContainment(f *fence, why string) {
	log := loggerOrDiscard(c.Logger)
	if c.Launcher == nil {
		log.Debug("agent processes contained", "mode", string(f.mode), "why", why)
		return
	}
	if c.Launcher.noteMode(f.mode) {
		log.Info("agent processes contained", "mode", string(f.mode), "why", why)
	}
}

func loggerOrDiscard(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
