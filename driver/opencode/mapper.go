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
}

func newMapper(session string, now func() time.Time) *mapper {
	if now == nil {
		now = time.Now
	}
	return &mapper{session: session, now: now, roles: map[string]string{}, parts: map[string]*partState{}, past: map[string]bool{},
		calls: map[string]string{}, approvals: map[string]*approvalState{}, denied: map[string]bool{}}
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

// partUpdated maps a part sent whole.
func (m *mapper) partUpdated(part oc.Part, raw []byte) []agent.Event {
	b := part.Base()
	if m.past[b.MessageID] {
		return nil // a late update of an ended turn's part
	}
	if m.roles[b.MessageID] == oc.RoleUser {
		return m.userPart(part, raw)
	}
	switch p := part.(type) {
	case *oc.TextPart:
		if p.Synthetic || p.Ignored {
			return nil
		}
		return m.textPart(b, agent.ItemMessage, p.Text, p.Time != nil && p.Time.End != 0, raw)
	case *oc.ReasoningPart:
		return m.textPart(b, agent.ItemReasoning, p.Text, p.Time.End != 0, raw)
	case *oc.ToolPart:
		return m.toolPart(p, raw)
	case *oc.StepFinishPart:
		return m.stepFinish(p, raw)
	case *oc.PatchPart:
		return m.patchPart(p, raw)
	case *oc.RetryPart:
		if !m.once(p.ID) {
			return nil
		}
		events := m.startTurn()
		e := m.event(agent.KindError, raw)
		e.Error = apiError(&p.Error)
		e.Error.Retrying = true
		return append(events, e)
	}
	return nil // step-start, snapshot, file, agent, compaction, subtask
}

// userPart maps the prompt's text as OpenCode echoes it.
func (m *mapper) userPart(part oc.Part, raw []byte) []agent.Event {
	p, ok := part.(*oc.TextPart)
	if !ok || p.Synthetic || p.Ignored || m.parts[p.ID] != nil {
		return nil
	}
	events := m.startTurn()
	st := &partState{item: agent.Item{ID: p.ID, Type: agent.ItemUserMessage, Status: agent.ItemDone, MessageID: p.MessageID, Text: p.Text}, started: true, done: true}
	m.parts[p.ID] = st
	return append(events, m.itemEvent(agent.KindItemCompleted, &st.item, raw))
}

// once reports whether a part that maps to one event only is new, and
// marks it seen.
func (m *mapper) once(id string) bool {
	if m.parts[id] != nil {
		return false
	}
	m.parts[id] = &partState{started: true, done: true}
	return true
}

// seedHistory marks the messages a resumed session already had as past:
// a reconciliation after a reconnect does not report them again.
func (m *mapper) seedHistory(msgs []oc.MessageWithParts) {
	for _, msg := range msgs {
		m.roles[msg.Info.ID] = msg.Info.Role
		m.past[msg.Info.ID] = true
	}
}

// part returns the state of a part, new if unseen; nil once it completed.
func (m *mapper) part(b oc.PartBase, typ agent.ItemType) *partState {
	st := m.parts[b.ID]
	if st == nil {
		st = &partState{item: agent.Item{ID: b.ID, Type: typ, Status: agent.ItemInProgress, MessageID: b.MessageID}}
		m.parts[b.ID] = st
	}
	if st.done {
		return nil
	}
	return st
}

// begin starts st's item if it has not started.
func (m *mapper) begin(st *partState, raw []byte) []agent.Event {
	if st.started {
		return nil
	}
	events := m.startTurn()
	m.busy, m.retrying = true, nil
	st.started = true
	m.open = append(m.open, st.item.ID)
	return append(events, m.itemEvent(agent.KindItemStarted, &st.item, raw))
}

// finish completes st's item with status.
func (m *mapper) finish(st *partState, status agent.ItemStatus, raw []byte) []agent.Event {
	events := m.startTurn()
	st.done = true
	st.item.Status = status
	for i, id := range m.open {
		if id == st.item.ID {
			m.open = append(m.open[:i], m.open[i+1:]...)
			break
		}
	}
	return append(events, m.itemEvent(agent.KindItemCompleted, &st.item, raw))
}

func (m *mapper) textPart(b oc.PartBase, typ agent.ItemType, text string, ended bool, raw []byte) []agent.Event {
	st := m.part(b, typ)
	if st == nil {
		return nil
	}
	if !ended {
		events := m.begin(st, raw)
		if len(text) > len(st.item.Text) {
			st.item.Text = text
		}
		return events
	}
	st.item.Text = text
	if typ == agent.ItemMessage && text != "" {
		m.text = text
	}
	return m.finish(st, agent.ItemDone, raw)
}

func (m *mapper) partDelta(p *oc.MessagePartDelta, raw []byte) []agent.Event {
	st := m.parts[p.PartID]
	if st == nil || st.done || !st.started || p.Field != "text" || p.Delta == "" {
		return nil
	}
	if st.item.Type != agent.ItemMessage && st.item.Type != agent.ItemReasoning {
		return nil
	}
	st.item.Text += p.Delta
	e := m.event(agent.KindItemDelta, raw)
	e.Delta = &agent.Delta{ItemID: st.item.ID, Field: agent.FieldText, Text: p.Delta}
	return []agent.Event{e}
}

func (m *mapper) toolPart(p *oc.ToolPart, raw []byte) []agent.Event {
	st := m.part(p.PartBase, toolItemType(p.Tool))
	if st == nil {
		return nil
	}
	if p.CallID != "" {
		m.calls[p.CallID] = p.ID
	}
	applyTool(&st.item, p)
	var events []agent.Event
	switch p.State.Status {
	case oc.ToolPending, oc.ToolRunning:
		events = m.begin(st, raw)
		if out := st.item.Command; out != nil && len(out.Output) > len(st.output) && out.Output[:len(st.output)] == st.output {
			d := m.event(agent.KindItemDelta, raw)
			d.Delta = &agent.Delta{ItemID: st.item.ID, Field: agent.FieldOutput, Text: out.Output[len(st.output):]}
			st.output = out.Output
			events = append(events, d)
		}
		return events
	case oc.ToolCompleted:
		return append(events, m.finish(st, agent.ItemDone, raw)...)
	case oc.ToolError:
		status := agent.ItemFailed
		if m.denied[p.CallID] {
			status = agent.ItemDeclined
		}
		return append(events, m.finish(st, status, raw)...)
	}
	return nil
}

func (m *mapper) stepFinish(p *oc.StepFinishPart, raw []byte) []agent.Event {
	if !m.once(p.ID) {
		return nil
	}
	u := agent.Usage{
		InputTokens: int64(p.Tokens.Input), OutputTokens: int64(p.Tokens.Output), ReasoningTokens: int64(p.Tokens.Reasoning),
		CacheReadTokens: int64(p.Tokens.Cache.Read), CacheWriteTokens: int64(p.Tokens.Cache.Write), CostUSD: p.Cost,
	}
	events := m.startTurn()
	m.hasUsage = true
	m.usage.InputTokens += u.InputTokens
	m.usage.OutputTokens += u.OutputTokens
	m.usage.ReasoningTokens += u.ReasoningTokens
	m.usage.CacheReadTokens += u.CacheReadTokens
	m.usage.CacheWriteTokens += u.CacheWriteTokens
	m.usage.CostUSD += u.CostUSD
	e := m.event(agent.KindUsage, raw)
	e.Usage = &u
	return append(events, e)
}

func (m *mapper) patchPart(p *oc.PatchPart, raw []byte) []agent.Event {
	st := m.part(p.PartBase, agent.ItemFileChange)
	if st == nil {
		return nil
	}
	st.item.Changes = make([]agent.FileChange, 0, len(p.Files))
	for _, f := range p.Files {
		st.item.Changes = append(st.item.Changes, agent.FileChange{Path: f, Kind: agent.ChangeUpdate})
	}
	return m.finish(st, agent.ItemDone, raw)
}

func (m *mapper) permissionAsked(r *oc.PermissionRequest, raw []byte) []agent.Event {
	if _, seen := m.approvals[r.ID]; seen {
		return nil
	}
	events := m.startTurn()
	a := agent.Approval{ID: r.ID, Kind: agent.ApprovalTool, SessionID: m.session, Agent: agentName, TurnID: m.turn,
		Tool: r.Permission, Input: json.RawMessage(r.Metadata), Title: permissionTitle(r),
		Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeAlways}, Created: m.now()}
	if r.Tool != nil {
		a.ItemID = m.calls[r.Tool.CallID]
	}
	if len(a.Input) == 0 || string(a.Input) == "null" {
		a.Input = nil
	}
	m.approvals[r.ID] = &approvalState{approval: a}
	e := m.event(agent.KindApprovalRequested, raw)
	e.Approval = &a
	return append(events, e)
}

// pendingApproval returns the approval id asks for if it waits.
func (m *mapper) pendingApproval(id string) (agent.Approval, bool) {
	st := m.approvals[id]
	if st == nil || st.resolved {
		return agent.Approval{}, false
	}
	return st.approval, true
}

// resolved reports a resolution of a pending approval; nothing if it was
// settled already.
func (m *mapper) resolved(r agent.Resolution, raw []byte) []agent.Event {
	st := m.approvals[r.ApprovalID]
	if st == nil || st.resolved {
		return nil
	}
	if st.first != nil {
		r = *st.first // a client's answer, claimed before the agent's word came
	} else {
		st.first = &r
	}
	st.resolved = true
	if r.Decision == agent.Deny {
		m.denyCall(st)
	}
	e := m.event(agent.KindApprovalResolved, raw)
	e.Resolution = &r
	return []agent.Event{e}
}

// denyCall marks the approval's tool call refused, so its error completes
// it as declined.
func (m *mapper) denyCall(st *approvalState) {
	for call, part := range m.calls {
		if part == st.approval.ItemID && part != "" {
			m.denied[call] = true
		}
	}
}

// permissionReplied is the agent's word that a request was answered: by
// this driver (already reported), or by another client of the server.
func (m *mapper) permissionReplied(p *oc.PermissionReplied, raw []byte) []agent.Event {
	r := agent.Resolution{ApprovalID: p.RequestID, Decision: agent.Allow, Cause: agent.CauseAgent, At: m.now()}
	switch p.Reply {
	case oc.ReplyReject:
		r.Decision = agent.Deny
	case oc.ReplyAlways:
		r.Scope = agent.ScopeAlways
	default:
		r.Scope = agent.ScopeOnce
	}
	return m.resolved(r, raw)
}

// clearApprovals resolves every pending approval with a deny of cause.
func (m *mapper) clearApprovals(cause agent.Cause, reason string) []agent.Event {
	var events []agent.Event
	for _, id := range m.pendingIDs() {
		events = append(events, m.resolved(agent.Resolution{ApprovalID: id, Decision: agent.Deny, Reason: reason, Cause: cause, At: m.now()}, nil)...)
	}
	return events
}

// pendingIDs lists the pending approvals in the order they were asked.
func (m *mapper) pendingIDs() []string {
	var ids []string
	for id, st := range m.approvals {
		if !st.resolved {
			ids = append(ids, id)
		}
	}
	sortByCreated(ids, m.approvals)
	return ids
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
// is gone, or the session closes): open items fail and the turn fails with
// why.
func (m *mapper) abort(why *agent.Error) []agent.Event {
	if !m.running() {
		return m.clearApprovals(agent.CauseTurnEnded, why.Message)
	}
	events := m.clearApprovals(agent.CauseTurnEnded, why.Message)
	for len(m.open) > 0 {
		events = append(events, m.finish(m.parts[m.open[0]], agent.ItemFailed, nil)...)
	}
	e := m.event(agent.KindTurnCompleted, nil)
	e.Turn = &agent.TurnInfo{Status: agent.TurnFailed, DurationMS: m.now().Sub(m.turnStart).Milliseconds()}
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
