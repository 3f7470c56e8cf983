package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
)

// Core is the session core as its front ends see it: the one seam every
// front end takes (protocol v1, the sessions API and its console, Mast,
// the shim), so a test can hand one a fake and a fleet a core that lives
// on other runners. *Manager is the core of one runner. What only the
// core's owner does (Drain, Shutdown, Expire) is not part of it.
type Core interface {
	// Agents lists the agent kinds offered and what each can do;
	// Unavailable the kinds known but not offered, and why.
	Agents() map[string]agent.Capabilities
	Unavailable() map[string]string

	Create(ctx context.Context, req CreateRequest) (Info, error)
	Reopen(ctx context.Context, id string, lastSeq uint64, relay bool) (Info, error)
	Get(id string) (Info, error)
	List() []Info
	Close(ctx context.Context, id string) error
	// ShuttingDown: no session or turn is taken any more.
	ShuttingDown() bool
	// Hold keeps a session alive for a host attached to it; once every
	// hold is released the session is closed after grace, unless it is
	// held again meanwhile (protocol v1's hosts).
	Hold(ctx context.Context, id string, grace time.Duration) (release func(), err error)

	Prompt(ctx context.Context, id string, p agent.Prompt) error
	Steer(ctx context.Context, id string, p agent.Prompt) error
	// Configure changes a running session's mode or model.
	Configure(ctx context.Context, id string, set agent.Settings) (Info, error)
	Interrupt(ctx context.Context, id string) error
	// Input and Control are a native client's: the agent's own protocol.
	// A line numbered n > 0 is given to the agent once, however often it
	// is sent (a host resends what it had no word of); Info.InputSeq is
	// the last one given.
	Input(ctx context.Context, id string, n uint64, line []byte) error
	Control(ctx context.Context, id, subtype string, params json.RawMessage) (json.RawMessage, error)

	// Events yields a session's events after seq `after`, then live ones,
	// until the session has ended; Feed every session's, in the order
	// they were logged, from a position of the runner-wide feed.
	Events(ctx context.Context, id string, after uint64) iter.Seq2[agent.Event, error]
	// EventGroups is Events in groups of what was ready together, at
	// most max each: for a reader that writes a burst at once.
	EventGroups(ctx context.Context, id string, after uint64, max int) iter.Seq2[[]agent.Event, error]
	Feed(ctx context.Context, after uint64) iter.Seq2[FeedEvent, error]
	// Pace makes a reader hold the session's agent back to its own pace
	// (a session's host); see Pacer.
	Pace(id string, after uint64) (Pacing, error)
	FeedStart() (uint64, error)
	FeedEnd() (uint64, error)

	Approvals() ([]approvals.Record, error)
	Resolve(ctx context.Context, sessionID string, r agent.Resolution) (agent.Resolution, error)
	Messages(ctx context.Context, id string) ([]agent.Item, error)
	Diff(ctx context.Context, id string) ([]agent.FileChange, error)
}

var _ Core = (*Manager)(nil)

// Runner is one runner of a fleet, as its registry has it.
type Runner struct {
	Name   string   `json:"name"`
	Addr   string   `json:"addr,omitempty"`
	Agents []string `json:"agents"`
	// Sessions counts its live sessions; MaxSessions is its room (0: no
	// bound); Load is Sessions over MaxSessions, or Sessions when there
	// is no bound.
	Sessions    int     `json:"sessions"`
	MaxSessions int     `json:"max_sessions,omitempty"`
	Load        float64 `json:"load"`
	// State is active, draining (it takes no new sessions) or lost (its
	// heartbeats stopped).
	State     string    `json:"state"`
	Heartbeat time.Time `json:"heartbeat"`
}

// What a core that spans runners may answer besides the errors of one.
var (
	// ErrDraining: the runner is draining and takes no new session.
	ErrDraining = errors.New("sessions: the runner is draining: it takes no new sessions")
	// ErrNoRunner: a request names a runner the fleet does not have.
	ErrNoRunner = errors.New("sessions: no such runner")
	// ErrRunnerGone: the runner a session lives on does not answer.
	ErrRunnerGone = errors.New("sessions: the session's runner does not answer")
)

// Runner states.
const (
	RunnerActive   = "active"
	RunnerDraining = "draining"
	RunnerLost     = "lost"
)

// Fleet is what a core that spans runners adds to Core; a front end finds
// it with a type assertion. Drain stops (or, with drain false, resumes)
// new placements on a runner while its sessions go on.
type Fleet interface {
	Runners(ctx context.Context) ([]Runner, error)
	Drain(ctx context.Context, runner string, drain bool) error
}
