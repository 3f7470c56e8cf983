package transport

import (
	"os/exec"
	"runtime"
	"sync"
	"time"

	"github.com/tetherhq/tether/internal/contain"
)

// Launcher starts child processes from one OS thread that they all share.
//
// The kernel sends a child its parent-death signal (Command's children get
// SIGKILL) when the thread that forked it ends, not when the process does,
// and the Go runtime ends a thread whose goroutine exits while locked to
// it. So a Command without a Launcher forks from a thread it keeps locked
// until its child has exited: one OS thread, with its stacks, per child.
// Commands that share a Launcher fork from its thread instead, which stays
// locked while any child it started is alive and ends after the last one
// has been reaped. A runner with many idle agents saves a thread per agent.
// Its children's exits and stderr are waited for together too (on Linux,
// one goroutine with an epoll of their pidfds and pipes), which saves two
// goroutines' stacks per agent.
//
// The zero Launcher is ready to use and holds no thread while none of its
// children is alive. It must not be copied after first use.
type Launcher struct {
	mu   sync.Mutex
	live int           // children started and not yet released
	reqs chan startReq // the thread's requests; nil while no thread runs
	// mode is the containment last logged for its children, so a runner
	// says it once rather than per agent (never auto, the zero value).
	mode Containment
	// watch waits for its children's exits and stderr from one
	// goroutine, instead of two of each child's own.
	watch watcher
	// cgroup is where its children's cgroups go, looked for once: a
	// process's own cgroup and its rights there do not change.
	cgroup struct {
		probed bool
		parent string
		err    error
	}
}

type startReq struct {
	cmd  *exec.Cmd
	done chan<- error
}

// start runs cmd.Start on the Launcher's thread. On success the caller
// owes release, once the child has exited and been reaped.
func (l *Launcher) start(cmd *exec.Cmd) (release func(), err error) {
	l.mu.Lock()
	if l.live == 0 {
		l.reqs = make(chan startReq)
		go forkThread(l.reqs)
	}
	l.live++
	reqs := l.reqs
	l.mu.Unlock()
	done := make(chan error, 1)
	reqs <- startReq{cmd, done}
	if err := <-done; err != nil {
		l.release()
		return nil, err
	}
	return l.release, nil
}

// release drops a child; the thread ends with the last one.
func (l *Launcher) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live--
	if l.live == 0 {
		close(l.reqs)
		l.reqs = nil
	}
}

// forkThread starts processes until reqs closes. It never unlocks: when it
// returns, its thread ends, after every child it forked is gone.
func forkThread(reqs <-chan startReq) {
	runtime.LockOSThread()
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}

// noteMode records the containment a child got and reports whether it
// differs from the last one recorded.
func (l *Launcher) noteMode(mode Containment) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mode == mode {
		return false
	}
	l.mode = mode
	return true
}

// staleCgroupAge is how old an agent cgroup whose maker is gone must be
// before a Launcher removes it.
const staleCgroupAge = time.Minute

// cgroupParent is contain.Delegated, asked once. The first time, it also
// removes the empty cgroups a killed runner left there.
func (l *Launcher) cgroupParent() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.cgroup.probed {
		l.cgroup.parent, l.cgroup.err = contain.Delegated()
		l.cgroup.probed = true
		if l.cgroup.err == nil {
			contain.RemoveStale(l.cgroup.parent, staleCgroupAge)
		}
	}
	return l.cgroup.parent, l.cgroup.err
}
