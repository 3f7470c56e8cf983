// Package contain owns ending what an agent process leaves behind: the
// processes it started that left its process group (setsid, double forks,
// daemons). It offers two ways, both Linux only:
//
//   - a cgroup v2 per agent (Cgroup): the agent is started inside it, and
//     everything it starts stays inside unless it may write the cgroup tree;
//     cgroup.kill ends them all at once;
//   - a child subreaper (StartReaper): orphans are reparented to this process
//     instead of init, so they can be found among its children by a marker
//     variable in their environment (KillMarked), and their zombies reaped
//     without taking an exit status that os/exec waits for (ReapOrphans).
//
// It knows nothing of agents beyond a process id and a marker.
package contain

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
)

// MarkerVar is the environment variable that names the agent a process
// descends from, in subreaper mode: each agent gets a value of its own.
const MarkerVar = "TETHER_AGENT_SCOPE"

var (
	// ErrNoCgroup matches the errors that say why this process cannot make
	// cgroups of its own.
	ErrNoCgroup = errors.New("contain: no writable cgroup v2")
	// ErrUnsupported is returned where the platform lacks what a mode needs.
	ErrUnsupported = errors.New("contain: not supported on this platform")
)

// NewMarker returns a value for MarkerVar no other agent has: this
// process's pid and random bits.
func NewMarker() string {
	return strconv.Itoa(os.Getpid()) + "." + randomHex(8)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return hex.EncodeToString(b)
}
