package fleet

import (
	"strings"
	"sync"
	"time"
)

// redialEvery is how often a node's failed redials of one peer reach the
// runner's log as errors: a peer that is down (a runner restarting, a
// node lost) is dialled several times a second, by each route of the pool.
const redialEvery = time.Minute

// redialNotes keeps, per peer, when its failed redial was last logged.
type redialNotes struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// quiet says whether msg, one of the server's errors, is a failed redial
// of a peer already logged within redialEvery: detail, not news.
func (n *redialNotes) quiet(msg string, now time.Time) bool {
	const prefix = "Error trying to connect to route"
	if n == nil || !strings.HasPrefix(msg, prefix) {
		return false
	}
	peer := msg
	if _, after, ok := strings.Cut(msg, "dial tcp "); ok {
		peer, _, _ = strings.Cut(after, ": ")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if at, ok := n.last[peer]; ok && now.Sub(at) < redialEvery {
		return true
	}
	n.last[peer] = now
	return false
}
