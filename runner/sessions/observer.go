package sessions

import "github.com/tetherhq/tether/agent"

// Observer learns what the manager's sessions do, for metrics. Its methods
// run on the sessions' own goroutines, in their event order, and must
// return quickly.
type Observer interface {
	// AgentStarted reports a session's agent start: err is nil when it
	// started, else why not.
	AgentStarted(agentName string, err error)
	// EventLogged reports an event once it is in the log (session.ended
	// last), with its seq set.
	EventLogged(agentName string, e *agent.Event)
}

// noObserver observes nothing.
type noObserver struct{}

func (noObserver) AgentStarted(string, error)       {}
func (noObserver) EventLogged(string, *agent.Event) {}
