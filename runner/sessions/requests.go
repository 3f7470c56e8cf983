package sessions

import (
	"slices"
	"sync"

	"github.com/tetherhq/tether/agent"
)

// maxPendingRequests bounds the prompts noted whose turn has not started:
// a turn.started that never came (an agent that failed the prompt without
// a turn) must not leave an id behind for a later turn forever.
const maxPendingRequests = 8

// promptRequests keeps agent.Prompt's promise that turn.started carries
// the prompt's RequestID, whatever the driver: the ids of the prompts
// handed to the agent wait here, oldest first, and a turn.started that
// has none of its own takes the oldest. A front end then tells from the
// log alone which turns its own prompts started.
type promptRequests struct {
	mu  sync.Mutex
	ids []string
}

// add notes a prompt about to be handed to the agent.
func (r *promptRequests) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, id)
	if len(r.ids) > maxPendingRequests {
		r.ids = slices.Delete(r.ids, 0, len(r.ids)-maxPendingRequests)
	}
}

// withdraw takes back a prompt the agent refused.
func (r *promptRequests) withdraw(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(r.ids, id); i >= 0 {
		r.ids = slices.Delete(r.ids, i, i+1)
	}
}

// stamp gives a turn.started the oldest prompt's id, unless the driver
// gave it one.
func (r *promptRequests) stamp(e *agent.Event) {
	r.mu.Lock()
	if len(r.ids) == 0 {
		r.mu.Unlock()
		return
	}
	id := r.ids[0]
	r.ids = slices.Delete(r.ids, 0, 1)
	r.mu.Unlock()
	if id == "" || (e.Turn != nil && e.Turn.RequestID != "") {
		return
	}
	turn := agent.TurnInfo{}
	if e.Turn != nil {
		turn = *e.Turn // the driver's may be shared
	}
	turn.RequestID = id
	e.Turn = &turn
}
