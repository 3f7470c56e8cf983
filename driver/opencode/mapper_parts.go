package opencode

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

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
	case *oc.FilePart, *oc.AgentPart:
		return m.whole(attachmentItem(part), raw)
	}
	return nil // step-start, snapshot, compaction, subtask (a user message's)
}

// userPart maps the prompt as OpenCode echoes it: its text, a subtask (a
// command's prompt for a subagent) as the prompt it is, and the files and
// agents it names.
func (m *mapper) userPart(part oc.Part, raw []byte) []agent.Event {
	switch p := part.(type) {
	case *oc.TextPart:
		if p.Synthetic || p.Ignored {
			return nil
		}
		return m.whole(agent.Item{ID: p.ID, Type: agent.ItemUserMessage, Status: agent.ItemDone, MessageID: p.MessageID, Text: p.Text}, raw)
	case *oc.SubtaskPart:
		return m.whole(agent.Item{ID: p.ID, Type: agent.ItemUserMessage, Status: agent.ItemDone, MessageID: p.MessageID, Text: p.Prompt}, raw)
	case *oc.FilePart, *oc.AgentPart:
		return m.whole(attachmentItem(part), raw)
	}
	return nil
}

// whole reports an item OpenCode gives whole, once.
func (m *mapper) whole(item agent.Item, raw []byte) []agent.Event {
	if m.parts[item.ID] != nil {
		return nil
	}
	events := m.startTurn()
	st := &partState{item: item, started: true, done: true}
	m.parts[item.ID] = st
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
	if st.item.Type == agent.ItemFileChange {
		m.noteEdit(p.MessageID, st.item.Changes)
	}
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
		status := agent.ItemDone
		if c := st.item.Command; c != nil && c.ExitCode == nil {
			// bash reports a command it killed (an abort, its timeout)
			// as completed, with no exit code.
			status = agent.ItemFailed
		}
		return append(events, m.finish(st, status, raw)...)
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

// patchPart is a file_change of the files a step changed that no file
// tool of its message reported already (a shell command's writes); a
// write is one file_change, its tool's, not a second one from the patch.
func (m *mapper) patchPart(p *oc.PatchPart, raw []byte) []agent.Event {
	var files []string
	for _, f := range p.Files {
		if !m.reported(p.MessageID, f) {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		m.once(p.ID)
		return nil
	}
	st := m.part(p.PartBase, agent.ItemFileChange)
	if st == nil {
		return nil
	}
	st.item.Changes = make([]agent.FileChange, 0, len(files))
	for _, f := range files {
		st.item.Changes = append(st.item.Changes, agent.FileChange{Path: f, Kind: agent.ChangeUpdate})
	}
	return m.finish(st, agent.ItemDone, raw)
}

// noteEdit records the paths a file tool of message reported.
func (m *mapper) noteEdit(message string, changes []agent.FileChange) {
	for _, c := range changes {
		if !slices.Contains(m.edited[message], c.Path) {
			m.edited[message] = append(m.edited[message], c.Path)
		}
	}
}

// reported says whether a file tool of message reported path: the patch's
// paths are absolute, a tool's as the model wrote them.
func (m *mapper) reported(message, path string) bool {
	path = filepath.Clean(path)
	for _, p := range m.edited[message] {
		p = filepath.Clean(p)
		if p == path || (!filepath.IsAbs(p) && strings.HasSuffix(path, string(filepath.Separator)+p)) {
			return true
		}
	}
	return false
}
