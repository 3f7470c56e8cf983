package mock

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/tetherhq/tether/agent"
)

// The mock's modes: in ModePlan a turn says what it would do and runs,
// writes and calls nothing.
const (
	ModeDefault = "default"
	ModePlan    = "plan"
)

// modes are the mock's, as its capabilities give them.
func modes() []agent.Mode {
	return []agent.Mode{
		{ID: ModeDefault, Name: "Default", Description: "runs its made-up command, notes each turn and calls its tool"},
		{ID: ModePlan, Name: "Plan", Description: "says what it would do; runs, writes and calls nothing"},
	}
}

// DefaultModel is the model a session reports when the request names none.
const DefaultModel = "mock-1"

// Config tunes the mock. The zero value is fast and deterministic.
type Config struct {
	// Now is the clock of the events; nil means time.Now.
	Now func() time.Time
	// Pace, when set, is the pause before each event, to show a client
	// streaming; zero means none.
	Pace time.Duration
	// After is the timer Pace waits on; nil means time.After. Tests give
	// a channel they control.
	After func(time.Duration) <-chan time.Time
	// Outbox is how many events wait for the reader of Events before a
	// turn waits for room; 0 means 64.
	Outbox int
}

// Driver is the mock agent. It keeps its conversations in memory, by
// native id, for resumes; they live as long as the Driver.
type Driver struct {
	cfg Config

	mu            sync.Mutex
	conversations map[string]*conversation
	started       int // conversations made, for native ids
	// token sets this driver's native ids apart from another process's:
	// a runner of a fleet may resume a conversation another one began.
	token string
}

var _ agent.Driver = (*Driver)(nil)

// New returns a mock driver.
func New(cfg Config) *Driver {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.Outbox <= 0 {
		cfg.Outbox = 64
	}
	var token [3]byte
	_, _ = rand.Read(token[:]) // never fails (crypto/rand)
	return &Driver{cfg: cfg, conversations: map[string]*conversation{}, token: hex.EncodeToString(token[:])}
}

func (d *Driver) Name() string { return "mock" }

func (d *Driver) Capabilities() agent.Capabilities {
	return agent.Capabilities{Resume: true, Steer: true, Questions: true, Diff: true, Images: true,
		Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeSession}, Modes: modes(), SetModel: true, Models: []string{DefaultModel, "mock-2"}}
}

// conversation is what outlives a session: its items, its turn count and
// what it changed in its workspace. A session holds it while open.
type conversation struct {
	nativeID string
	model    string
	turns    int
	items    []agent.Item
	notes    *notesFile // nil until the first file change
	held     bool
}

// Start starts a session, or resumes the conversation req.Resume names.
// The session's events begin with session.started.
func (d *Driver) Start(ctx context.Context, req agent.StartRequest) (agent.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.Fork {
		return nil, &agent.UnsupportedError{Agent: "mock", Capability: "fork"}
	}
	// The mock runs no tools, so it takes no MCP servers (Capabilities.MCP
	// is empty).
	if err := agent.CheckMCPServers("mock", nil, req.MCPServers); err != nil {
		return nil, err
	}
	opts, err := parseOptions(req.Options, req.Resume)
	if err != nil {
		return nil, err
	}
	conv, err := d.take(req, opts)
	if err != nil {
		return nil, err
	}
	if req.Mode != "" && !d.Capabilities().HasMode(req.Mode) {
		return nil, &agent.InvalidSettingsError{Agent: "mock", Reason: "no mode " + strconv.Quote(req.Mode)}
	}
	s := newSession(d, conv, req.Workspace)
	s.mode = req.Mode
	s.emitNow(s.event(agent.KindSessionStarted, func(e *agent.Event) {
		e.Session = &agent.SessionInfo{Agent: "mock", NativeID: conv.nativeID, Model: conv.model, Cwd: req.Workspace}
	}))
	return s, nil
}

// take makes a conversation, or holds the one a resume names.
func (d *Driver) take(req agent.StartRequest, opts Options) (*conversation, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if req.Resume != "" {
		c, ok := d.conversations[req.Resume]
		switch {
		case !ok && opts.Turns > 0: // another process's, from its script position
			c = &conversation{nativeID: req.Resume, model: req.Model, turns: opts.Turns}
			if c.model == "" {
				c.model = DefaultModel
			}
			d.conversations[c.nativeID] = c
		case !ok:
			return nil, &ConversationError{NativeID: req.Resume, Err: ErrUnknownConversation}
		case c.held:
			return nil, &ConversationError{NativeID: req.Resume, Err: ErrConversationInUse}
		}
		c.held = true
		if req.Model != "" {
			c.model = req.Model
		}
		return c, nil
	}
	d.started++
	c := &conversation{nativeID: "mock-" + strconv.Itoa(d.started) + "-" + d.token, model: req.Model, held: true}
	if c.model == "" {
		c.model = DefaultModel
	}
	d.conversations[c.nativeID] = c
	return c, nil
}

// release lets a later Start resume the conversation.
func (d *Driver) release(c *conversation) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c.held = false
}

// Options are the mock's start options (agent.StartRequest.Options).
type Options struct {
	// Turns, with a resume of a conversation this Driver does not hold
	// (one of another process, say), continues it from that script
	// position: the turns it had; its next turn is Turns+1. Its items
	// and notes stay with the process that had them.
	Turns int `json:"turns"`
}

// ResumeOptions are the start options that continue a conversation of
// turns turns from its script position, in this process or another.
func ResumeOptions(turns int) json.RawMessage {
	b, _ := json.Marshal(Options{Turns: turns}) // an int field: cannot fail
	return b
}

// parseOptions reads the options: only turns, with a resume (an empty
// object or null is no options).
func parseOptions(raw json.RawMessage, resume string) (Options, error) {
	var opts Options
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return opts, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return opts, fmt.Errorf("%w: %v", ErrBadOptions, err)
	}
	for name := range fields {
		if name != "turns" {
			return opts, fmt.Errorf("%w: the mock takes only turns (got %q)", ErrBadOptions, name)
		}
	}
	if err := json.Unmarshal(raw, &opts); err != nil || opts.Turns < 0 {
		return opts, fmt.Errorf("%w: turns must be a count of turns", ErrBadOptions)
	}
	if opts.Turns > 0 && resume == "" {
		return opts, fmt.Errorf("%w: turns continues a resumed conversation, and nothing is resumed", ErrBadOptions)
	}
	return opts, nil
}
