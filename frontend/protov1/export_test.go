package protov1

import (
	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/eventlog"
)

// ProjectLog is the frames, each without its seq, that a host reads of a
// session's events from its start: relay for a host_control host.
func ProjectLog(events []agent.Event, relay bool) []eventlog.Event {
	p := newProjector(relay, func(string, uint64) string { return "" })
	var out []eventlog.Event
	for i := range events {
		if b, ok := p.frame(nil, &events[i]); ok {
			out = append(out, eventlog.Event{Seq: uint64(events[i].Seq), Payload: b})
		}
	}
	return out
}
