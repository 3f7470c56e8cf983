package opencode

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// agentName is the driver's name in events and approvals.
const agentName = "opencode"

// mapper turns one OpenCode session's bus events into canonical events. It
// is pure state: the session feeds it events (from the stream, or rebuilt
// from the message history after a reconnect) under its lock, and hands
// what it returns to the outbox in order. Parts are keyed by their id, which
// OpenCode keeps stable while a part grows, so an item is started once,
// completed once, and a part seen again (a reconciliation, a late update
// after the turn ended) adds nothing twice.
type mapper struct {
	session string // OpenCode's session id
	now     func() time.Time

	turn      string // the running turn's id; "" between turns
	turns     int
	turnStart time.Time
	// busy says the agent has worked on the running turn: a session.idle
	// before that is a previous turn's late one.
	busy bool

	roles     map[string]string         // message id → role
	parts     map[string]*partState     // part id → its item
	open      []string                  // part ids started and not completed, oldest first
	calls     map[string]string         // tool call id → part id
	approvals map[string]*approvalState // permission request id → its approval
	denied    map[string]bool           // tool call ids a permission reply rejected
	// edited are the paths each message's file tools (write, edit, …)
	// reported: the step's patch part names them again.
	edited map[string][]string
	// current are the messages of the running turn; past those of ended
	// turns, whose late updates (an abort's) must not touch the next one.
	current []string
	past    map[string]bool
	// incomplete are the running turn's assistant messages not yet
	// completed: OpenCode may say idle before an aborted message is
	// closed, and says it again after.
	incomplete map[string]bool

	usage    agent.Usage
	hasUsage bool
	text     string       // the turn's last completed message text
	failure  *agent.Error // why the turn failed, as the agent said
	// retrying is the model API's failure OpenCode is retrying; a turn
	// that ends while it retries (aborted, or it gave up) failed with it.
	retrying *agent.Error
	aborted  bool // the agent reported an abort
	// interrupted and limited say the driver aborted the turn: a client's
	// interrupt, or the turn timeout.
	interrupted bool
	limited     bool
}

type partState struct {
	item    agent.Item
	started bool
	done    bool
	output  string // command output already sent as deltas
}

type approvalState struct {
	approval agent.Approval
	// first is the first resolution, claimed by a client before the agent
	// is told; resolved says approval.resolved was reported.
	first    *agent.Resolution
	resolved bool
	// questions is how many questions a question request holds (0 for a
	// permission request).
	questions int
}

func newMapper(session string, now func() time.Time) *mapper {
	if now == nil {
		now = time.Now
	}
	return &mapper{session: session, now: now, roles: map[string]string{}, parts: map[string]*partState{}, past: map[string]bool{},
		calls: map[string]string{}, approvals: map[string]*approvalState{}, denied: map[string]bool{}, edited: map[string][]string{}}
}

func (m *mapper) event(k agent.Kind, raw []byte) agent.Event {
	return agent.Event{Kind: k, SessionID: m.session, TurnID: m.turn, Time: m.now(), Raw: raw}
}

func (m *mapper) itemEvent(k agent.Kind, it *agent.Item, raw []byte) agent.Event {
	e := m.event(k, raw)
	c := *it
	c.Changes = append([]agent.FileChange(nil), it.Changes...)
	c.Plan = append([]agent.PlanStep(nil), it.Plan...)
	if it.Changes != nil && c.Changes == nil {
		c.Changes = []agent.FileChange{}
	}
	if it.Tool != nil {
		t := *it.Tool
		c.Tool = &t
	}
	if it.Command != nil {
		cmd := *it.Command
		c.Command = &cmd
	}
	e.Item = &c
	return e
}

// startSession is session.started, once the session exists.
func (m *mapper) startSession(model, cwd string) agent.Event {
	e := m.event(agent.KindSessionStarted, nil)
	e.TurnID = ""
	e.Session = &agent.SessionInfo{Agent: agentName, NativeID: m.session, Model: model, Cwd: cwd}
	return e
}

// running reports whether a turn runs.
func (m *mapper) running() bool { return m.turn != "" }

// startTurn starts a turn: the driver's prompt, or work that comes without
// one (a capture replayed, another client's prompt).
func (m *mapper) startTurn() []agent.Event {
	if m.turn != "" {
		return nil
	}
	m.turns++
	m.turn = m.session + "/t" + strconv.Itoa(m.turns)
	m.turnStart = m.now()
	m.usage, m.hasUsage, m.text, m.failure, m.retrying = agent.Usage{}, false, "", nil, nil
	m.aborted, m.interrupted, m.limited, m.busy = false, false, false, false
	m.incomplete = map[string]bool{}
	return []agent.Event{m.event(agent.KindTurnStarted, nil)}
}

// handle maps one bus event of the session.
func (m *mapper) handle(ev *oc.Event) []agent.Event {
	raw := ev.Raw()
	switch p := ev.Payload.(type) {
	case *oc.MessageUpdated:
		return m.messageUpdated(p, raw)
	case *oc.MessagePartUpdated:
		return m.partUpdated(p.Part, raw)
	case *oc.MessagePartDelta:
		return m.partDelta(p, raw)
	case *oc.SessionStatusChanged:
		return m.status(p, raw)
	case *oc.SessionIdle:
		if !m.busy || len(m.incomplete) > 0 {
			return nil // a previous turn's late idle, or one before the turn's end
		}
		return m.endTurn(raw)
	case *oc.SessionError:
		return m.sessionError(p, raw)
	case *oc.PermissionAsked:
		return m.permissionAsked(&p.PermissionRequest, raw)
	case *oc.PermissionReplied:
		return m.permissionReplied(p, raw)
	case *oc.QuestionAsked:
		return m.questionAsked(&p.QuestionRequest, raw)
	case *oc.QuestionReplied:
		return m.questionReplied(p, raw)
	case *oc.QuestionRejected:
		return m.questionRejected(p, raw)
	}
	return nil
}

func (m *mapper) messageUpdated(p *oc.MessageUpdated, raw []byte) []agent.Event {
	info := p.Info
	if _, seen := m.roles[info.ID]; !seen && m.running() {
		m.current = append(m.current, info.ID)
	}
	m.roles[info.ID] = info.Role
	if info.Role != oc.RoleAssistant || !m.running() || m.past[info.ID] {
		return nil
	}
	if info.Time.Completed == 0 {
		m.incomplete[info.ID] = true
	} else {
		delete(m.incomplete, info.ID)
	}
	if info.Error != nil {
		m.noteError(info.Error)
	}
	return nil
}

// noteError records why the turn is ending early.
func (m *mapper) noteError(e *oc.NamedError) {
	if e.Aborted() {
		m.aborted = true
		return
	}
	if m.failure == nil {
		m.failure = apiError(e)
	}
}

func apiError(e *oc.NamedError) *agent.Error {
	msg := e.Data.Message
	if msg == "" {
		msg = e.Error()
	}
	if e.Name == oc.ErrorNameAPI || e.Data.StatusCode != 0 {
		return &agent.Error{Code: agent.ErrorAPI, Message: msg, Status: e.Data.StatusCode}
	}
	return &agent.Error{Code: agent.ErrorAgent, Message: msg}
}

func (m *mapper) sessionError(p *oc.SessionError, raw []byte) []agent.Event {
	if p.Error == nil {
		return nil
	}
	if m.running() {
		m.noteError(p.Error)
		return nil
	}
	if p.Error.Aborted() {
		return nil
	}
	e := m.event(agent.KindError, raw)
	e.Error = apiError(p.Error)
	return []agent.Event{e}
}

func (m *mapper) status(p *oc.SessionStatusChanged, raw []byte) []agent.Event {
	switch p.Status.Type {
	case oc.StatusBusy:
		events := m.startTurn()
		m.busy = true
		return events
	case oc.StatusRetry:
		events := m.startTurn()
		m.busy = true
		e := m.event(agent.KindError, raw)
		msg := p.Status.Message
		if msg == "" {
			msg = "the model API failed"
		}
		e.Error = &agent.Error{Code: agent.ErrorAPI, Message: msg + " (attempt " + strconv.Itoa(p.Status.Attempt) + ", retrying)", Retrying: true}
		m.retrying = &agent.Error{Code: agent.ErrorAPI, Message: msg}
		return append(events, e)
	}
	return nil // idle: session.idle follows and ends the turn
}

// seedHistory marks the messages a resumed session already had as past:
// a reconciliation after a reconnect does not report them again. Its turn
// ids go on from the turns it had (one user message each), so that a turn
// of this process never takes the id of an earlier one.
func (m *mapper) seedHistory(msgs []oc.MessageWithParts) {
	for _, msg := range msgs {
		m.roles[msg.Info.ID] = msg.Info.Role
		m.past[msg.Info.ID] = true
		if msg.Info.Role == oc.RoleUser {
			m.turns++
		}
	}
}

// closeOpen completes every open item: text as it stands, tools failed
// (they did not finish).
func (m *mapper) closeOpen() []agent.Event {
	var events []agent.Event
	for len(m.open) > 0 {
		st := m.parts[m.open[0]]
		status := agent.ItemFailed
		if st.item.Type == agent.ItemMessage || st.item.Type == agent.ItemReasoning {
			status = agent.ItemDone
		}
		events = append(events, m.finish(st, status, nil)...)
	}
	return events
}

// answered reports whether the running turn has an assistant message and
// every one is closed: with the session idle, the turn is over.
func (m *mapper) answered() bool {
	if !m.running() || len(m.incomplete) > 0 {
		return false
	}
	for _, id := range m.current {
		if m.roles[id] == oc.RoleAssistant {
			return true
		}
	}
	return false
}

// endTurn is session.idle: the turn ended, completed, interrupted or
// failed as the agent and the driver said.
func (m *mapper) endTurn(raw []byte) []agent.Event {
	if !m.running() {
		return nil
	}
	info := &agent.TurnInfo{Status: agent.TurnCompleted, Text: m.text, DurationMS: m.now().Sub(m.turnStart).Milliseconds()}
	var why *agent.Error
	cause, reason := agent.CauseTurnEnded, "the turn ended"
	switch {
	case m.limited:
		info.Status = agent.TurnFailed
		why = &agent.Error{Code: agent.ErrorTurnLimit, Message: "the turn ran past its time limit and was aborted"}
		cause, reason = agent.CauseInterrupted, "the turn timed out"
	case m.interrupted || m.aborted:
		info.Status = agent.TurnInterrupted
		cause, reason = agent.CauseInterrupted, "the turn was interrupted"
	case m.failure != nil:
		info.Status = agent.TurnFailed
		why = m.failure
	case m.retrying != nil:
		info.Status = agent.TurnFailed
		why = m.retrying
	}
	events := m.clearApprovals(cause, reason)
	events = append(events, m.closeOpen()...)
	var usage *agent.Usage
	if m.hasUsage {
		u := m.usage
		usage = &u
	}
	e := m.event(agent.KindTurnCompleted, raw)
	e.Turn, e.Usage, e.Error = info, usage, why
	m.closeTurn()
	return append(events, e)
}

// abort ends a running turn that cannot end by itself (the agent's process
// is gone, or the session closes): open items fail (those that waited for
// an approval the end denied are declined: they never ran) and the turn
// fails with why; with no why (the host closed the session) the turn is
// interrupted.
func (m *mapper) abort(why *agent.Error) []agent.Event {
	reason, status := "the session closed", agent.TurnInterrupted
	if why != nil {
		reason, status = why.Message, agent.TurnFailed
	}
	events := m.clearApprovals(agent.CauseTurnEnded, reason)
	if !m.running() {
		return events
	}
	for len(m.open) > 0 {
		part := m.open[0]
		done := agent.ItemFailed
		if m.deniedPart(part) {
			done = agent.ItemDeclined
		}
		events = append(events, m.finish(m.parts[part], done, nil)...)
	}
	e := m.event(agent.KindTurnCompleted, nil)
	e.Turn = &agent.TurnInfo{Status: status, DurationMS: m.now().Sub(m.turnStart).Milliseconds()}
	e.Error = why
	m.closeTurn()
	return append(events, e)
}

// closeTurn ends the running turn; its messages become past.
func (m *mapper) closeTurn() {
	for _, id := range m.current {
		m.past[id] = true
	}
	m.current, m.turn = nil, ""
}

// ended is session.ended with reason (and why, for an exit).
func (m *mapper) ended(reason string, why *agent.Error) agent.Event {
	e := m.event(agent.KindSessionEnded, nil)
	e.TurnID = ""
	e.Session = &agent.SessionInfo{Agent: agentName, NativeID: m.session, Reason: reason}
	e.Error = why
	return e
}

// protocolError reports data from the agent the driver could not read.
func (m *mapper) protocolError(data []byte, err error) agent.Event {
	e := m.event(agent.KindError, rawJSON(data))
	e.Error = &agent.Error{Code: agent.ErrorProtocol, Message: err.Error()}
	return e
}

// rawJSON is data as an event's Raw: as it is when it is JSON, else as a
// JSON string, so nothing the agent sent is lost.
func rawJSON(data []byte) json.RawMessage {
	if json.Valid(data) {
		return append(json.RawMessage(nil), data...)
	}
	s, _ := json.Marshal(string(data))
	return s
}
