package codex

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/protocol/codexapp"
)

// mapper turns the app-server's notifications into canonical events. It is
// pure: the session feeds it decoded messages under its lock and queues
// what it returns, so it can be tested line by line against captures.
type mapper struct {
	now    func() time.Time
	thread string // the thread id: the events' session id
	turn   string // the running turn, "" between turns

	// open are the items started and not completed, in start order.
	open  map[string]*agent.Item
	order []string

	// total is the thread's token usage as last reported; base is what it
	// was when the running turn started, so a turn's usage is the rest.
	total, base codexapp.TokenUsage
	usageRaw    json.RawMessage
	// plans numbers the plan snapshots of the turn.
	plans int
	// limited turns an interrupted end into a failed one {turn_limit}: the
	// driver interrupted the turn because it ran too long.
	limited bool
	// declined are the open items whose approval the turn's end denied:
	// they complete declined (they never ran), not failed.
	declined map[string]bool
}

func newMapper(now func() time.Time) *mapper {
	return &mapper{now: now, open: map[string]*agent.Item{}, declined: map[string]bool{}}
}

// decline notes that item's approval was denied by the turn's end.
func (m *mapper) decline(item string) {
	if _, open := m.open[item]; open {
		m.declined[item] = true
	}
}

func (m *mapper) event(k agent.Kind, raw []byte) agent.Event {
	return agent.Event{Kind: k, SessionID: m.thread, TurnID: m.turn, Time: m.now(), Raw: raw}
}

func (m *mapper) itemEvent(k agent.Kind, item agent.Item, raw []byte) agent.Event {
	e := m.event(k, raw)
	e.Item = &item
	return e
}

// startSession is session.started, once the thread is known.
func (m *mapper) startSession(thread, model, cwd string, raw []byte) agent.Event {
	m.thread = thread
	e := m.event(agent.KindSessionStarted, raw)
	e.TurnID = ""
	e.Session = &agent.SessionInfo{Agent: Name, NativeID: thread, Model: model, Cwd: cwd}
	return e
}

// notification maps one notification; those it does not map give nothing.
func (m *mapper) notification(n *codexapp.Notification) []agent.Event {
	raw := n.Raw()
	switch p := n.Payload.(type) {
	case *codexapp.TurnNotification:
		if p.Method() == codexapp.MethodTurnStarted {
			return m.turnStarted(p, raw)
		}
		return m.turnCompleted(p, raw)
	case *codexapp.ItemNotification:
		if p.Method() == codexapp.MethodItemStarted {
			return m.itemStarted(&p.Item, raw)
		}
		return m.itemCompleted(&p.Item, raw)
	case *codexapp.DeltaNotification:
		return m.delta(p, raw)
	case *codexapp.TokenUsageUpdatedNotification:
		m.total, m.usageRaw = p.TokenUsage.Total, raw
	case *codexapp.ErrorNotification:
		e := m.event(agent.KindError, raw)
		e.Error = turnError(&p.Error)
		e.Error.Retrying = p.WillRetry
		return []agent.Event{e}
	case *codexapp.TurnPlanUpdatedNotification:
		return m.planUpdated(p, raw)
	}
	return nil
}

func (m *mapper) turnStarted(p *codexapp.TurnNotification, raw []byte) []agent.Event {
	m.turn, m.base, m.plans, m.limited = p.Turn.ID, m.total, 0, false
	return []agent.Event{m.event(agent.KindTurnStarted, raw)}
}

// turnCompleted ends the turn: items still open fail, usage, then
// turn.completed.
func (m *mapper) turnCompleted(p *codexapp.TurnNotification, raw []byte) []agent.Event {
	if m.turn == "" {
		m.turn = p.Turn.ID // a capture that began mid-turn
	}
	out := m.closeOpen()
	var usage *agent.Usage
	if m.total != m.base {
		usage = usageOf(m.total, m.base)
		e := m.event(agent.KindUsage, m.usageRaw)
		e.Usage = usage
		out = append(out, e)
	}
	end := m.event(agent.KindTurnCompleted, raw)
	end.Turn, end.Usage = &agent.TurnInfo{Text: lastMessage(p.Turn.Items)}, usage
	if p.Turn.DurationMs != nil {
		end.Turn.DurationMS = *p.Turn.DurationMs
	}
	switch p.Turn.Status {
	case codexapp.TurnCompleted:
		end.Turn.Status = agent.TurnCompleted
	case codexapp.TurnInterrupted:
		end.Turn.Status = agent.TurnInterrupted
		if m.limited {
			end.Turn.Status = agent.TurnFailed
			end.Error = &agent.Error{Code: agent.ErrorTurnLimit, Message: "the turn ran longer than the turn timeout"}
		}
	default:
		end.Turn.Status = agent.TurnFailed
		end.Error = turnError(p.Turn.Error)
	}
	m.turn, m.limited = "", false
	return append(out, end)
}

// closeOpen completes every open item as failed (declined when it waited
// for an approval the turn's end denied): its turn ended first.
func (m *mapper) closeOpen() []agent.Event {
	var out []agent.Event
	for _, id := range m.order {
		it, ok := m.open[id]
		if !ok {
			continue
		}
		it.Status = agent.ItemFailed
		if m.declined[id] {
			it.Status = agent.ItemDeclined
		}
		out = append(out, m.itemEvent(agent.KindItemCompleted, *it, nil))
	}
	clear(m.open)
	clear(m.declined)
	m.order = m.order[:0]
	return out
}

// abort ends a running turn the agent will not end: open items fail and the
// turn fails with why; with no why (the host closed the session) the turn
// is interrupted.
func (m *mapper) abort(why *agent.Error) []agent.Event {
	if m.turn == "" {
		return nil
	}
	out := m.closeOpen()
	end := m.event(agent.KindTurnCompleted, nil)
	end.Turn, end.Error = &agent.TurnInfo{Status: agent.TurnFailed}, why
	if why == nil {
		end.Turn.Status = agent.TurnInterrupted
	}
	m.turn = ""
	return append(out, end)
}

func (m *mapper) itemStarted(it *codexapp.ThreadItem, raw []byte) []agent.Event {
	item := toItem(it, false)
	if _, ok := m.open[item.ID]; !ok {
		m.order = append(m.order, item.ID)
	}
	m.open[item.ID] = &item
	return []agent.Event{m.itemEvent(agent.KindItemStarted, item, raw)}
}

func (m *mapper) itemCompleted(it *codexapp.ThreadItem, raw []byte) []agent.Event {
	item := toItem(it, true)
	delete(m.open, item.ID)
	return []agent.Event{m.itemEvent(agent.KindItemCompleted, item, raw)}
}

func (m *mapper) delta(p *codexapp.DeltaNotification, raw []byte) []agent.Event {
	field := agent.FieldText
	switch p.Method() {
	case codexapp.MethodCommandOutputDelta, codexapp.MethodFileChangeOutputDelta:
		field = agent.FieldOutput
	}
	e := m.event(agent.KindItemDelta, raw)
	e.Delta = &agent.Delta{ItemID: p.ItemID, Field: field, Text: p.Delta}
	return []agent.Event{e}
}

// planUpdated is a snapshot of the turn's plan: a plan item of its own, so
// the last one is the plan as it stands.
func (m *mapper) planUpdated(p *codexapp.TurnPlanUpdatedNotification, raw []byte) []agent.Event {
	m.plans++
	steps := make([]agent.PlanStep, 0, len(p.Plan))
	for _, s := range p.Plan {
		steps = append(steps, agent.PlanStep{Text: s.Step, Status: planStatus(s.Status)})
	}
	item := agent.Item{ID: fmt.Sprintf("%s/plan/%d", p.TurnID, m.plans), Type: agent.ItemPlan,
		Status: agent.ItemDone, Text: p.Explanation, Plan: steps}
	return []agent.Event{m.itemEvent(agent.KindItemCompleted, item, raw)}
}

// openItem is the started item id, if it is open.
func (m *mapper) openItem(id string) (agent.Item, bool) {
	it, ok := m.open[id]
	if !ok {
		return agent.Item{}, false
	}
	return *it, true
}

func planStatus(s string) string {
	if s == codexapp.StatusInProgress {
		return "in_progress"
	}
	return s // pending, completed
}

// toItem maps a Codex item; done says it has ended (item/completed or a
// turn of the history).
func toItem(it *codexapp.ThreadItem, done bool) agent.Item {
	item := agent.Item{ID: it.ID, Status: itemStatus(it.Status, done)}
	switch it.Type {
	case codexapp.ItemUserMessage:
		item.Type, item.Text = agent.ItemUserMessage, it.UserText()
	case codexapp.ItemAgentMessage:
		item.Type, item.Text = agent.ItemMessage, it.Text
	case codexapp.ItemReasoning:
		item.Type, item.Text = agent.ItemReasoning, it.ReasoningText()
	case codexapp.ItemPlan:
		item.Type, item.Text = agent.ItemPlan, it.Text
	case codexapp.ItemCommandExecution:
		item.Type = agent.ItemCommand
		item.Command = &agent.Command{Command: it.Command, Cwd: it.Cwd, Output: it.AggregatedOutput, ExitCode: it.ExitCode}
	case codexapp.ItemFileChange:
		item.Type = agent.ItemFileChange
		item.Changes = make([]agent.FileChange, 0, len(it.Changes))
		for _, c := range it.Changes {
			item.Changes = append(item.Changes, agent.FileChange{Path: c.Path, Kind: changeKind(c.Kind.Type), Diff: c.Diff})
		}
	case codexapp.ItemMcpToolCall, codexapp.ItemDynamicToolCall:
		item.Type = agent.ItemToolCall
		item.Tool = &agent.ToolCall{Name: it.Tool, Server: it.Server, Input: it.Arguments,
			Output: toolOutput(it.Result), IsError: it.ToolError() != ""}
		if item.Tool.IsError && item.Tool.Output == "" {
			item.Tool.Output = it.ToolError()
		}
	case codexapp.ItemWebSearch:
		item.Type = agent.ItemToolCall
		input, _ := json.Marshal(map[string]string{"query": it.Query})
		item.Tool = &agent.ToolCall{Name: "web_search", Input: input}
	default:
		// Items the model has no type for (image views, compactions, review
		// modes, …) are tool calls named by their type, the whole item as
		// input: nothing is lost.
		item.Type = agent.ItemToolCall
		item.Tool = &agent.ToolCall{Name: it.Type, Input: it.Raw}
	}
	if item.Tool != nil && item.Tool.Name == "" {
		item.Tool.Name = it.Type
	}
	return item
}

func itemStatus(s string, done bool) agent.ItemStatus {
	if !done {
		return agent.ItemInProgress
	}
	switch s {
	case codexapp.StatusFailed:
		return agent.ItemFailed
	case codexapp.StatusDeclined:
		return agent.ItemDeclined
	}
	return agent.ItemDone
}

func changeKind(k string) agent.ChangeKind {
	switch k {
	case "add":
		return agent.ChangeAdd
	case "delete":
		return agent.ChangeDelete
	}
	return agent.ChangeUpdate
}

// toolOutput is an MCP result's text content, or the result as JSON.
func toolOutput(result json.RawMessage) string {
	if len(result) == 0 || string(result) == "null" {
		return ""
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(result, &r) == nil && len(r.Content) > 0 {
		var parts []string
		for _, c := range r.Content {
			if c.Type == "text" {
				parts = append(parts, c.Text)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return string(result)
}

// lastMessage is the text of a turn's last agent message.
func lastMessage(items []codexapp.ThreadItem) string {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Type == codexapp.ItemAgentMessage {
			return items[i].Text
		}
	}
	return ""
}

// turnError classifies a Codex turn error: the model API's failures are
// api_error with the HTTP status where Codex tells it.
func turnError(e *codexapp.TurnError) *agent.Error {
	if e == nil {
		return &agent.Error{Code: agent.ErrorAgent, Message: "the turn failed"}
	}
	out := &agent.Error{Code: agent.ErrorAgent, Message: e.Message, Status: e.HTTPStatus()}
	kind := e.Kind()
	if msg, ok := badRequest(kind, e.Message); ok {
		out.Message, out.Status = msg, http.StatusBadRequest
	}
	if out.Message == "" {
		out.Message = "the turn failed"
	}
	switch {
	case kind == "contextWindowExceeded" || kind == "sessionBudgetExceeded":
		out.Code = agent.ErrorTurnLimit
	case kind == "sandboxError":
		out.Code = agent.ErrorTool
	case out.Status != 0 || strings.Contains(strings.ToLower(kind), "http") || strings.Contains(kind, "Stream") ||
		kind == "serverOverloaded" || kind == "rateLimitExceeded" || kind == "usageLimitExceeded":
		out.Code = agent.ErrorAPI
	}
	return out
}

// badRequest reads Codex's report of a 400 from the model API: no status,
// kind "other", and the API's error body as the message. It returns the
// body's own message.
func badRequest(kind, message string) (string, bool) {
	if kind != "other" || !strings.HasPrefix(message, "{") {
		return "", false
	}
	var body struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(message), &body) != nil || body.Error == nil {
		return "", false
	}
	if body.Error.Message == "" {
		return message, true
	}
	return body.Error.Message, true
}

// usageOf is what a turn used: total less what was used before it.
func usageOf(total, base codexapp.TokenUsage) *agent.Usage {
	return &agent.Usage{
		InputTokens:      total.InputTokens - base.InputTokens,
		OutputTokens:     total.OutputTokens - base.OutputTokens,
		CacheReadTokens:  total.CachedInputTokens - base.CachedInputTokens,
		CacheWriteTokens: total.CacheWriteInputTokens - base.CacheWriteInputTokens,
		ReasoningTokens:  total.ReasoningOutputTokens - base.ReasoningOutputTokens,
	}
}
