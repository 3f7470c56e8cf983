package acp

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
)

// mapper turns one session's ACP updates into canonical events. Its
// caller (the session) holds the lock.
type mapper struct {
	agentName string
	now       func() time.Time
	native    string // the agent's session id
	turn      string // the running turn's id, empty between turns
	turns     int
	// text is the open message or reasoning item, ended by anything else.
	text *agent.Item
	// tools are the turn's tool call items by tool call id.
	tools map[string]*agent.Item
	order []string
	// denied are tool calls whose approval was denied: their failure is a
	// decline.
	denied map[string]bool
	plan   *agent.Item
	// answer is the turn's last message: its final answer.
	answer string
	seq    int
	// done are the session's completed items, for Messages.
	done []agent.Item
	keep bool
}

func newMapper(name string, now func() time.Time, keepHistory bool) *mapper {
	return &mapper{agentName: name, now: now, tools: map[string]*agent.Item{}, denied: map[string]bool{}, keep: keepHistory}
}

func (m *mapper) event(k agent.Kind) agent.Event {
	return agent.Event{Kind: k, TurnID: m.turn, Time: m.now()}
}

func (m *mapper) itemEvent(k agent.Kind, it agent.Item) agent.Event {
	e := m.event(k)
	e.Item = &it
	return e
}

func (m *mapper) complete(it *agent.Item) agent.Event {
	if it.Status == agent.ItemInProgress {
		it.Status = agent.ItemDone
	}
	if m.keep {
		m.done = append(m.done, *it)
	}
	return m.itemEvent(agent.KindItemCompleted, *it)
}

func (m *mapper) nextID(prefix string) string {
	m.seq++
	return fmt.Sprintf("%s-%d", prefix, m.seq)
}

// startTurn is turn.started.
func (m *mapper) startTurn(requestID string) agent.Event {
	m.turns++
	m.turn = fmt.Sprintf("turn-%d", m.turns)
	e := m.event(agent.KindTurnStarted)
	e.Turn = &agent.TurnInfo{RequestID: requestID}
	return e
}

// endTurn closes what is open and is turn.completed.
func (m *mapper) endTurn(status agent.TurnStatus, why *agent.Error, usage *agent.Usage, took time.Duration) []agent.Event {
	events := m.closeText()
	for _, id := range m.order {
		it := m.tools[id]
		if it.Status != agent.ItemInProgress {
			continue
		}
		switch {
		case m.denied[id]:
			it.Status = agent.ItemDeclined
		case status != agent.TurnCompleted:
			it.Status = agent.ItemFailed
		}
		events = append(events, m.complete(it))
	}
	if m.plan != nil {
		events = append(events, m.complete(m.plan))
	}
	e := m.event(agent.KindTurnCompleted)
	e.Turn = &agent.TurnInfo{Status: status, Text: m.answer, DurationMS: took.Milliseconds()}
	e.Error, e.Usage = why, usage
	events = append(events, e)
	m.turn, m.text, m.plan, m.answer = "", nil, nil, ""
	m.tools, m.order, m.denied = map[string]*agent.Item{}, nil, map[string]bool{}
	return events
}

// closeText completes the open message or reasoning item.
func (m *mapper) closeText() []agent.Event {
	if m.text == nil {
		return nil
	}
	it := m.text
	m.text = nil
	if it.Type == agent.ItemMessage {
		m.answer = it.Text
	}
	return []agent.Event{m.complete(it)}
}

// update maps one session/update; those without a canonical place give
// nothing.
func (m *mapper) update(u acpsdk.SessionUpdate) []agent.Event {
	if m.turn == "" {
		return nil // outside a turn: a loaded session's history, or noise
	}
	switch {
	case u.AgentMessageChunk != nil:
		return m.chunk(agent.ItemMessage, u.AgentMessageChunk.Content)
	case u.AgentThoughtChunk != nil:
		return m.chunk(agent.ItemReasoning, u.AgentThoughtChunk.Content)
	case u.ToolCall != nil:
		t := u.ToolCall
		return m.toolCall(string(t.ToolCallId), t.Title, t.Kind, t.Status, t.Content, t.RawInput)
	case u.ToolCallUpdate != nil:
		return m.toolUpdate(u.ToolCallUpdate)
	case u.Plan != nil:
		return m.planUpdate(u.Plan.Entries)
	}
	return nil
}

// chunk adds text to the open item of its type, starting one if needed.
func (m *mapper) chunk(typ agent.ItemType, c acpsdk.ContentBlock) []agent.Event {
	if c.Text == nil || c.Text.Text == "" {
		return nil
	}
	var events []agent.Event
	if m.text != nil && m.text.Type != typ {
		events = m.closeText()
	}
	if m.text == nil {
		m.text = &agent.Item{ID: m.nextID(string(typ)), Type: typ, Status: agent.ItemInProgress}
		events = append(events, m.itemEvent(agent.KindItemStarted, *m.text))
	}
	m.text.Text += c.Text.Text
	e := m.event(agent.KindItemDelta)
	e.Delta = &agent.Delta{ItemID: m.text.ID, Field: agent.FieldText, Text: c.Text.Text}
	return append(events, e)
}

// toolCall starts a tool call's item (or updates it, when a permission
// request made it first).
func (m *mapper) toolCall(id, title string, kind acpsdk.ToolKind, status acpsdk.ToolCallStatus, content []acpsdk.ToolCallContent, input any) []agent.Event {
	events := m.closeText()
	if id == "" {
		id = m.nextID("tool")
	}
	if _, ok := m.tools[id]; ok {
		st := status
		return append(events, m.toolUpdate(&acpsdk.SessionToolCallUpdate{ToolCallId: acpsdk.ToolCallId(id), Title: &title, Status: &st, Content: content})...)
	}
	it := &agent.Item{ID: id, Status: agent.ItemInProgress}
	rawInput, _ := json.Marshal(input) // a decoded JSON value encodes again
	switch {
	case kind == acpsdk.ToolKindExecute:
		it.Type = agent.ItemCommand
		it.Command = &agent.Command{Command: commandOf(title, input)}
	case hasDiff(content) || kind == acpsdk.ToolKindEdit || kind == acpsdk.ToolKindDelete:
		it.Type = agent.ItemFileChange
		it.Changes = []agent.FileChange{}
	default:
		it.Type = agent.ItemToolCall
		it.Tool = &agent.ToolCall{Name: cmpStr(string(kind), "other"), Input: nonNull(rawInput)}
		it.Text = title
	}
	m.addContent(it, content)
	m.tools[id] = it
	m.order = append(m.order, id)
	events = append(events, m.itemEvent(agent.KindItemStarted, *it))
	return append(events, m.settle(it, &status)...)
}

// toolUpdate applies a tool_call_update.
func (m *mapper) toolUpdate(u *acpsdk.SessionToolCallUpdate) []agent.Event {
	id := string(u.ToolCallId)
	if id == "" {
		// No id to match: an item of its own, which a later update
		// cannot reach.
		id = m.nextID("tool")
		u.ToolCallId = acpsdk.ToolCallId(id)
	}
	it, ok := m.tools[id]
	if !ok {
		var kind acpsdk.ToolKind
		if u.Kind != nil {
			kind = *u.Kind
		}
		title := ""
		if u.Title != nil {
			title = *u.Title
		}
		st := acpsdk.ToolCallStatusInProgress
		events := m.toolCall(id, title, kind, st, u.Content, u.RawInput)
		return append(events, m.settle(m.tools[id], u.Status)...)
	}
	if it.Status != agent.ItemInProgress {
		return nil
	}
	m.addContent(it, u.Content)
	if it.Command != nil && u.Title != nil && it.Command.Command == "" {
		it.Command.Command = *u.Title
	}
	return m.settle(it, u.Status)
}

// settle completes the item when the status says it ended.
func (m *mapper) settle(it *agent.Item, status *acpsdk.ToolCallStatus) []agent.Event {
	if status == nil {
		return nil
	}
	switch *status {
	case acpsdk.ToolCallStatusCompleted:
		it.Status = agent.ItemDone
	case acpsdk.ToolCallStatusFailed:
		it.Status = agent.ItemFailed
		if m.denied[it.ID] {
			it.Status = agent.ItemDeclined
		}
	default:
		return nil
	}
	return []agent.Event{m.complete(it)}
}

// addContent puts a tool call's content where the item keeps it: text as
// output, diffs as file changes.
func (m *mapper) addContent(it *agent.Item, content []acpsdk.ToolCallContent) {
	for _, c := range content {
		switch {
		case c.Diff != nil:
			if it.Type != agent.ItemFileChange {
				continue
			}
			it.Changes = upsertChange(it.Changes, changeOf(c.Diff))
		case c.Content != nil && c.Content.Content.Text != nil:
			text := c.Content.Content.Text.Text
			switch {
			case it.Command != nil:
				it.Command.Output = text
			case it.Tool != nil:
				it.Tool.Output = text
			}
		}
	}
}

func (m *mapper) planUpdate(entries []acpsdk.PlanEntry) []agent.Event {
	steps := make([]agent.PlanStep, 0, len(entries))
	for _, e := range entries {
		steps = append(steps, agent.PlanStep{Text: e.Content, Status: string(e.Status)})
	}
	if m.plan == nil {
		m.plan = &agent.Item{ID: m.nextID("plan"), Type: agent.ItemPlan, Status: agent.ItemInProgress, Plan: steps}
		return append(m.closeText(), m.itemEvent(agent.KindItemStarted, *m.plan))
	}
	m.plan.Plan = steps
	return nil
}

// changes are the file changes of the session's completed items.
func changesOf(items []agent.Item) []agent.FileChange {
	var out []agent.FileChange
	for _, it := range items {
		if it.Type == agent.ItemFileChange && it.Status == agent.ItemDone {
			for _, c := range it.Changes {
				out = upsertChange(out, c)
			}
		}
	}
	return out
}

func upsertChange(changes []agent.FileChange, c agent.FileChange) []agent.FileChange {
	for i := range changes {
		if changes[i].Path == c.Path {
			changes[i] = c
			return changes
		}
	}
	return append(changes, c)
}

// changeOf is an ACP diff as a file change with a unified diff.
func changeOf(d *acpsdk.ToolCallContentDiff) agent.FileChange {
	old := ""
	if d.OldText != nil {
		old = *d.OldText
	}
	kind := agent.ChangeUpdate
	if d.OldText == nil || (old == "" && metaKind(d.Meta) == "add") {
		kind = agent.ChangeAdd
	}
	return agent.FileChange{Path: d.Path, Kind: kind, Diff: unifiedDiff(d.Path, old, d.NewText, kind == agent.ChangeAdd)}
}

func metaKind(meta map[string]any) string {
	k, _ := meta["kind"].(string)
	return k
}

// unifiedDiff is old and new as one hunk: every old line removed, every
// new one added (ACP gives whole texts, not hunks).
func unifiedDiff(path, old, new string, added bool) string {
	var b strings.Builder
	from := "a/" + strings.TrimPrefix(path, "/")
	if added {
		from = "/dev/null"
	}
	fmt.Fprintf(&b, "--- %s\n+++ b/%s\n", from, strings.TrimPrefix(path, "/"))
	ol, nl := splitLines(old), splitLines(new)
	fmt.Fprintf(&b, "@@ -%d,%d +1,%d @@\n", min(1, len(ol)), len(ol), len(nl))
	for _, l := range ol {
		b.WriteString("-" + l + "\n")
	}
	for _, l := range nl {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func hasDiff(content []acpsdk.ToolCallContent) bool {
	for _, c := range content {
		if c.Diff != nil {
			return true
		}
	}
	return false
}

// commandOf is a shell call's command: its input's command field, else
// the call's title (which agents set to the command line).
func commandOf(title string, input any) string {
	if in, ok := input.(map[string]any); ok {
		if c, ok := in["command"].(string); ok && c != "" {
			return c
		}
	}
	return title
}

func cmpStr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if string(raw) == "null" {
		return nil
	}
	return raw
}
