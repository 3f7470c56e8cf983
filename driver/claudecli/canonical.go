package claudecli

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// canonicalMapper maps one Claude Code session's stream-json onto the
// canonical model (docs/events.md has the table). It is fed, in order,
// every message the CLI writes, the turns the driver starts and the
// approvals it asks for; it returns the events each makes. It is pure
// state: no goroutine, no I/O.
type canonicalMapper struct {
	session string
	now     func() time.Time
	started bool
	turn    string
	turns   int
	// stream is the message being streamed (partial messages): its id
	// and the item each content block index became.
	stream struct {
		id    string
		items map[int]string
	}
	// blocks counts the content blocks seen of the assistant message each
	// agent (the main one, "", and each subagent, by its tool call) is
	// writing: the CLI writes one block per line, so the count is the
	// block's index. One entry per agent, not per message, so a long
	// session does not grow it.
	blocks map[string]blockCount
	// open are tool items waiting for their result, by tool_use id.
	open map[string]*agent.Item
	// declined are tool uses an approval refused.
	declined map[string]bool
}

func newCanonicalMapper(sessionID string, now func() time.Time) *canonicalMapper {
	return &canonicalMapper{session: sessionID, now: now, blocks: map[string]blockCount{},
		open: map[string]*agent.Item{}, declined: map[string]bool{}}
}

func (m *canonicalMapper) event(k agent.Kind, raw []byte) agent.Event {
	return agent.Event{Kind: k, SessionID: m.session, TurnID: m.turn, Time: m.now(), Raw: raw}
}

// itemEvent reports an item as it is now: a copy, since open items go on
// changing after the event is handed over.
func (m *canonicalMapper) itemEvent(k agent.Kind, item *agent.Item, raw []byte) agent.Event {
	e := m.event(k, raw)
	e.Item = snapshot(item)
	return e
}

// ensureTurn starts a turn for output that comes without one (print mode,
// where the prompt went on the command line).
func (m *canonicalMapper) ensureTurn() []agent.Event {
	if m.turn != "" {
		return nil
	}
	m.turns++
	m.turn = m.session + "/t" + strconv.Itoa(m.turns)
	return []agent.Event{m.event(agent.KindTurnStarted, nil)}
}

// startSession reports the session's start before the CLI has said
// anything (it writes system/init only with the first turn); that init
// then maps to nothing.
func (m *canonicalMapper) startSession(nativeID, model, cwd string) agent.Event {
	m.started = true
	e := m.event(agent.KindSessionStarted, nil)
	e.TurnID = ""
	e.Session = &agent.SessionInfo{Agent: "claude", NativeID: nativeID, Model: model, Cwd: cwd}
	return e
}

// startTurn is the driver sending a prompt: the turn starts with the
// user's message; requestID is the client's id for it.
func (m *canonicalMapper) startTurn(prompt, requestID string) []agent.Event {
	m.turn = ""
	events := m.ensureTurn()
	if requestID != "" {
		events[0].Turn = &agent.TurnInfo{RequestID: requestID}
	}
	user := &agent.Item{ID: m.turn + "/prompt", Type: agent.ItemUserMessage, Status: agent.ItemDone, Text: prompt}
	return append(events, m.itemEvent(agent.KindItemCompleted, user, nil))
}

// message maps one line of the CLI's output.
func (m *canonicalMapper) message(msg cc.Message) []agent.Event {
	switch msg := msg.(type) {
	case *cc.SystemMessage:
		if msg.Subtype != "api_retry" {
			// init, and the status, hook and task lines that may come
			// between turns: they start none.
			return m.system(msg)
		}
		start := m.ensureTurn()
		return joined(start, m.system(msg))
	case *cc.StreamEvent:
		start := m.ensureTurn()
		return joined(start, m.streamEvent(msg))
	case *cc.AssistantMessage:
		start := m.ensureTurn()
		return joined(start, m.assistant(msg))
	case *cc.UserMessage:
		start := m.ensureTurn()
		return joined(start, m.toolResults(msg))
	case *cc.ResultMessage:
		start := m.ensureTurn()
		events := joined(start, m.result(msg))
		m.turn = ""
		return events
	}
	return nil
}

// line maps one line of the CLI's output as message does, and puts the
// line itself on exactly one of its events: the first that is not a
// session's start or end or a turn's end (a client that follows the
// agent's own lines, protocol v1, sees each there once, in order, and
// those three are its ready, error and done), or on a native event where
// the model has no place for it.
func (m *canonicalMapper) line(msg cc.Message) []agent.Event {
	events := m.message(msg)
	raw, checked := msg.Raw(), cc.Checked(msg)
	carrier, tail := -1, len(events)
	for i := range events {
		events[i].Raw, events[i].RawChecked = nil, false
		switch events[i].Kind {
		case agent.KindSessionStarted:
		case agent.KindTurnCompleted, agent.KindSessionEnded:
			tail = min(tail, i)
		default:
			if carrier < 0 {
				carrier = i
			}
		}
	}
	if carrier >= 0 && carrier < tail {
		events[carrier].Raw, events[carrier].RawChecked = raw, checked
		return events
	}
	native := m.event(agent.KindNative, raw)
	native.RawChecked = checked
	return slices.Insert(events, tail, native)
}

// joined is a turn's start, if one was needed, and then events; without
// a start, events themselves (no copy for every line of a turn).
func joined(start, events []agent.Event) []agent.Event {
	if len(start) == 0 {
		return events
	}
	return append(start, events...)
}

func (m *canonicalMapper) system(msg *cc.SystemMessage) []agent.Event {
	switch {
	case msg.Subtype == "init" && !m.started:
		m.started = true
		e := m.event(agent.KindSessionStarted, msg.Raw())
		e.TurnID = ""
		e.Session = &agent.SessionInfo{Agent: "claude", NativeID: msg.SessionID, Model: msg.Model, Cwd: msg.Cwd}
		return []agent.Event{e}
	case msg.Subtype == "api_retry":
		e := m.event(agent.KindError, msg.Raw())
		e.Error = &agent.Error{Code: agent.ErrorAPI, Message: "the model API failed; retrying", Retrying: true}
		if msg.ErrorStatus != nil {
			e.Error.Status = *msg.ErrorStatus
			e.Error.Message = "the model API answered " + strconv.Itoa(*msg.ErrorStatus) + "; retrying"
		}
		return []agent.Event{e}
	}
	return nil
}

func (m *canonicalMapper) streamEvent(msg *cc.StreamEvent) []agent.Event {
	ev := msg.Event
	switch ev.Type {
	case "message_start":
		var start struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(ev.Message, &start)
		m.stream.id, m.stream.items = start.ID, map[int]string{}
	case "content_block_start":
		var block struct {
			Type string          `json:"type"`
			ID   string          `json:"id"`
			Name string          `json:"name"`
			In   json.RawMessage `json:"input"`
		}
		_ = json.Unmarshal(ev.ContentBlock, &block)
		item := m.blockItem(block.Type, m.stream.id, ev.Index, block.ID, block.Name, nil, parentOf(msg.ParentToolUseID))
		if item == nil || m.stream.items == nil {
			return nil
		}
		m.stream.items[ev.Index] = item.ID
		if block.Type == cc.BlockToolUse {
			m.open[block.ID] = item // announced before its input; the whole message completes it
		}
		return []agent.Event{m.itemEvent(agent.KindItemStarted, item, msg.Raw())}
	case "content_block_delta":
		return m.streamDelta(msg)
	}
	return nil
}

func (m *canonicalMapper) streamDelta(msg *cc.StreamEvent) []agent.Event {
	ev := msg.Event
	id, ok := m.stream.items[ev.Index]
	if !ok || ev.Delta == nil {
		return nil
	}
	d := &agent.Delta{ItemID: id}
	switch ev.Delta.Type {
	case "text_delta":
		d.Field, d.Text = agent.FieldText, ev.Delta.Text
	case "thinking_delta":
		d.Field, d.Text = agent.FieldText, ev.Delta.Thinking
	case "input_json_delta":
		d.Field, d.Text = agent.FieldInput, ev.Delta.PartialJSON
	default:
		return nil
	}
	e := m.event(agent.KindItemDelta, msg.Raw())
	e.Delta = d
	return []agent.Event{e}
}

func (m *canonicalMapper) assistant(msg *cc.AssistantMessage) []agent.Event {
	if msg.Error != "" {
		return nil // the CLI's stand-in for an API failure: the turn's end says it
	}
	var out []agent.Event
	parent := parentOf(msg.ParentToolUseID)
	for _, block := range msg.Message.Content {
		index := m.nextBlock(parent, msg.Message.ID)
		var item *agent.Item
		switch b := block.(type) {
		case cc.TextBlock:
			item = m.blockItem(cc.BlockText, msg.Message.ID, index, "", "", nil, parent)
			item.Text = b.Text
		case cc.ThinkingBlock:
			item = m.blockItem(cc.BlockThinking, msg.Message.ID, index, "", "", nil, parent)
			item.Text = b.Thinking
		case cc.ToolUseBlock:
			out = append(out, m.toolStarted(msg, b.ID, b.Name, b.Input, parent)...)
			continue
		default:
			continue
		}
		item.Status = agent.ItemDone
		e := m.event(agent.KindItemCompleted, msg.Raw())
		e.Item = item // new and kept nowhere: no copy needed
		out = append(out, e)
	}
	return out
}

// blockCount is how many blocks of message id were seen.
type blockCount struct {
	id string
	n  int
}

// nextBlock is the index of the next block of message id, written by the
// agent of parent.
func (m *canonicalMapper) nextBlock(parent, id string) int {
	c := m.blocks[parent]
	if c.id != id {
		c = blockCount{id: id}
	}
	index := c.n
	c.n++
	m.blocks[parent] = c
	return index
}

// toolStarted opens a tool item with its whole input; a streamed one was
// announced already and only takes the input.
func (m *canonicalMapper) toolStarted(msg *cc.AssistantMessage, id, name string, input json.RawMessage, parent string) []agent.Event {
	item := m.blockItem(cc.BlockToolUse, msg.Message.ID, 0, id, name, input, parent)
	_, streamed := m.open[id]
	m.open[id] = item
	if streamed {
		return nil
	}
	return []agent.Event{m.itemEvent(agent.KindItemStarted, item, msg.Raw())}
}

// blockItem makes the item a content block becomes, in progress; nil for
// blocks that are not items.
func (m *canonicalMapper) blockItem(blockType, messageID string, index int, toolID, tool string, input json.RawMessage, parent string) *agent.Item {
	item := &agent.Item{ID: messageID + "/" + strconv.Itoa(index), Status: agent.ItemInProgress, MessageID: messageID, ParentID: parent}
	switch blockType {
	case cc.BlockText:
		item.Type = agent.ItemMessage
	case cc.BlockThinking:
		item.Type = agent.ItemReasoning
	case cc.BlockToolUse:
		item.ID = toolID
		classifyTool(item, tool, input)
	default:
		return nil
	}
	return item
}

func (m *canonicalMapper) toolResults(msg *cc.UserMessage) []agent.Event {
	var out []agent.Event
	for _, block := range msg.Message.Content {
		b, ok := block.(cc.ToolResultBlock)
		if !ok {
			continue
		}
		item, ok := m.open[b.ToolUseID]
		if !ok {
			continue
		}
		delete(m.open, b.ToolUseID)
		finishTool(item, b.ContentText(), b.IsError, m.declined[b.ToolUseID])
		out = append(out, m.itemEvent(agent.KindItemCompleted, item, msg.Raw()))
	}
	return out
}

func (m *canonicalMapper) result(msg *cc.ResultMessage) []agent.Event {
	var out []agent.Event
	status, failure := turnEnd(msg)
	for id, item := range m.open { // interrupted before their results
		delete(m.open, id)
		item.Status = agent.ItemFailed
		out = append(out, m.itemEvent(agent.KindItemCompleted, item, nil))
	}
	usage := &agent.Usage{InputTokens: msg.Usage.InputTokens, OutputTokens: msg.Usage.OutputTokens,
		CacheReadTokens: msg.Usage.CacheReadInputTokens, CacheWriteTokens: msg.Usage.CacheCreationInputTokens,
		CostUSD: msg.TotalCostUSD}
	u := m.event(agent.KindUsage, msg.Raw())
	u.Usage = usage
	end := m.event(agent.KindTurnCompleted, nil)
	end.Turn = &agent.TurnInfo{Status: status, Text: msg.Result, DurationMS: msg.DurationMS}
	end.Error = failure
	return append(out, u, end)
}

// abort ends a turn the agent can no longer finish (its process died):
// open items fail, and the turn fails with why; with no why (the host
// closed the session) the turn is interrupted.
func (m *canonicalMapper) abort(why *agent.Error) []agent.Event {
	if m.turn == "" {
		return nil
	}
	var out []agent.Event
	for id, item := range m.open {
		delete(m.open, id)
		item.Status = agent.ItemFailed
		out = append(out, m.itemEvent(agent.KindItemCompleted, item, nil))
	}
	end := m.event(agent.KindTurnCompleted, nil)
	end.Turn, end.Error = &agent.TurnInfo{Status: agent.TurnFailed}, why
	if why == nil {
		end.Turn.Status = agent.TurnInterrupted
	}
	m.turn = ""
	return append(out, end)
}

// turnEnd reads how a result ended its turn.
func turnEnd(msg *cc.ResultMessage) (agent.TurnStatus, *agent.Error) {
	switch {
	case !msg.IsError:
		return agent.TurnCompleted, nil
	case strings.HasPrefix(msg.TerminalReason, "aborted"):
		return agent.TurnInterrupted, nil
	case msg.APIErrorStatus != nil && *msg.APIErrorStatus != 0:
		return agent.TurnFailed, &agent.Error{Code: agent.ErrorAPI, Status: *msg.APIErrorStatus, Message: resultText(msg)}
	case msg.Subtype == cc.ResultErrorMaxTurns || msg.Subtype == cc.ResultErrorMaxBudgetUSD:
		return agent.TurnFailed, &agent.Error{Code: agent.ErrorTurnLimit, Message: msg.Subtype}
	}
	return agent.TurnFailed, &agent.Error{Code: agent.ErrorAgent, Message: resultText(msg)}
}

func resultText(msg *cc.ResultMessage) string {
	if msg.Result != "" {
		return msg.Result
	}
	if len(msg.Errors) > 0 {
		return strings.Join(msg.Errors, "; ")
	}
	return msg.Subtype
}

func parentOf(id *string) string {
	if id == nil {
		return ""
	}
	return *id
}
