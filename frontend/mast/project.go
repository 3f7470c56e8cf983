package mast

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
)

// projector turns one session's canonical events, in seq order, into
// mast.* events, and keeps the session's conversation as Mast messages
// (what get_messages and sync_response answer). It is a fold: fed the
// same events it reaches the same state, so a stream that starts mid-log
// first feeds it what came before, without sending.
//
// A prompt the orchestrator sent is its own: it keeps it in its store
// as it sends it, so the projector announces none of it (its
// turn.started carries the orchestrator's request, orchestratorRequest)
// and leaves it out of what sync_response answers; get_messages still has
// it. A prompt sent any other way (the sessions API, a console) is
// announced with its text, so the phone shows every prompt once.
//
// A turn's end (or the session's) retires its messages, all completed by
// then: they leave what the next events are projected against and wait
// in done, where a snapshot still finds them and a reader that keeps
// only what it may still be asked for (the daemon's projection) drops
// them. What is projected never depends on done, so every fold of the
// same events sends the same frames, whatever it dropped.
type projector struct {
	sessionID string
	// messages are the ones still open to the session's events, byID
	// the same by id.
	messages []*message
	byID     map[string]*message
	// itemMessage is the message each item's part belongs to.
	itemMessage map[string]string
	// retired are the ids of the messages the last turn's end retired,
	// until the next turn starts: an event of its that comes late goes
	// to its message without announcing it twice.
	retired map[string]bool
	// done are the retired messages, oldest first.
	done  []*message
	ended bool
	// heldTurn is the running turn, when the orchestrator's prompt
	// started it.
	heldTurn string
}

type message struct {
	Message
	parts map[string]int // item id → index in Parts; nil once retired
	// touched is the stamp of the last event that changed it.
	touched int64
	// held: a prompt of the orchestrator's, which it keeps itself; no
	// event announces it and no sync_response has it.
	held bool
}

func newProjector(sessionID string) *projector {
	return &projector{sessionID: sessionID, byID: map[string]*message{}, itemMessage: map[string]string{}}
}

// agentType is the name the protocol uses for an agent kind: its Mast
// name in the registry ("claude-code" for Claude Code), else its own.
func agentType(kind string) string {
	if k, ok := driver.Lookup(kind); ok {
		return k.MastName()
	}
	return kind
}

// agentKind reads an agentType of create_session: Mast's names and
// Tether's alike.
func agentKind(typ string) string {
	if k, ok := driver.LookupMast(typ); ok {
		return k.Name
	}
	return typ
}

func (p *projector) ev(typ string, data map[string]any) Event {
	data["sessionID"] = p.sessionID
	return Event{Type: typ, SessionID: p.sessionID, Data: data}
}

// messageFor is the message an item belongs to: the agent's own message
// id where it groups items in messages, else one user and one assistant
// message per turn.
func (p *projector) messageFor(e agent.Event, it *agent.Item) (id, role string) {
	role = "assistant"
	if it != nil && it.Type == agent.ItemUserMessage {
		role = "user"
	}
	if it != nil && it.MessageID != "" {
		return it.MessageID, role
	}
	scope := e.TurnID
	if scope == "" {
		scope = "session"
	}
	if role == "user" {
		return "msg_user_" + scope, role
	}
	return "msg_" + scope, role
}

// ensure returns the message, creating it (and announcing it, unless
// held) if new.
func (p *projector) ensure(id, role string, held bool, out []Event) (*message, []Event) {
	if m, ok := p.byID[id]; ok {
		return m, out
	}
	if p.retired[id] { // announced in its turn already
		return p.revive(id, role, held), out
	}
	m := &message{Message: Message{ID: id, Role: role, Parts: []Part{}}, parts: map[string]int{}, held: held}
	p.byID[id] = m
	p.messages = append(p.messages, m)
	if held {
		return m, out
	}
	return m, append(out, p.ev(EventMessageCreated, map[string]any{"message": map[string]any{"id": id, "role": role}}))
}

// heldBy says whether an item's message is the orchestrator's prompt.
func (p *projector) heldBy(e agent.Event, role string) bool {
	return role == "user" && e.TurnID != "" && e.TurnID == p.heldTurn
}

// revive opens a retired message again for an event that came after its
// turn's end: from done, or (where done no longer has it) as a completed
// message of no parts yet. Either way nothing is announced, so the frames
// are the same.
func (p *projector) revive(id, role string, held bool) *message {
	var m *message
	for i := len(p.done) - 1; i >= 0; i-- {
		if p.done[i].ID == id {
			m = p.done[i]
			p.done = slices.Delete(p.done, i, i+1)
			break
		}
	}
	if m == nil {
		m = &message{Message: Message{ID: id, Role: role, Parts: []Part{}, Completed: true}, held: held}
	}
	m.parts = make(map[string]int, len(m.Parts))
	for i, part := range m.Parts {
		if pid, ok := part["id"].(string); ok {
			m.parts[pid] = i
		}
	}
	p.byID[id] = m
	p.messages = append(p.messages, m)
	return m
}

// retire moves the open messages (all completed) to done.
func (p *projector) retire() {
	if len(p.messages) == 0 {
		return
	}
	if p.retired == nil {
		p.retired = map[string]bool{}
	}
	for _, m := range p.messages {
		p.retired[m.ID] = true
		m.parts = nil
		p.done = append(p.done, m)
	}
	p.messages = nil
	clear(p.byID)
	clear(p.itemMessage)
}

// setPart puts the part in its message, replacing an earlier one of the
// same id.
func (m *message) setPart(id string, part Part) {
	if i, ok := m.parts[id]; ok {
		m.Parts[i] = part
		return
	}
	m.parts[id] = len(m.Parts)
	m.Parts = append(m.Parts, part)
}

func (m *message) part(id string) Part {
	if i, ok := m.parts[id]; ok {
		return m.Parts[i]
	}
	return nil
}

// project folds one event in and returns what it becomes on the wire.
// stamp orders the session's changes (for sync's "since").
func (p *projector) project(e agent.Event, stamp int64) []Event {
	var out []Event
	switch e.Kind {
	case agent.KindSessionStarted:
		p.ended = false
		s := map[string]any{"id": p.sessionID, "status": "idle"}
		if e.Session != nil {
			s["agentType"] = agentType(e.Session.Agent)
			if e.Session.NativeID != "" {
				s["nativeId"] = e.Session.NativeID
			}
		}
		out = append(out, p.ev(EventSessionUpdated, map[string]any{"session": s}))
	case agent.KindTurnStarted:
		p.retired, p.heldTurn = nil, ""
		if e.Turn != nil && strings.HasPrefix(e.Turn.RequestID, orchestratorRequest) {
			p.heldTurn = e.TurnID
		}
		out = append(out, p.ev(EventSessionUpdated, map[string]any{"session": map[string]any{
			"id": p.sessionID, "status": "running", "turnId": e.TurnID}}))
	case agent.KindItemStarted, agent.KindItemCompleted:
		if e.Item == nil {
			return nil
		}
		id, role := p.messageFor(e, e.Item)
		var m *message
		m, out = p.ensure(id, role, p.heldBy(e, role), out)
		part := partOf(*e.Item)
		m.setPart(e.Item.ID, part)
		p.itemMessage[e.Item.ID] = id
		m.touched = stamp
		if m.held {
			return out
		}
		typ := EventPartUpdated
		if e.Kind == agent.KindItemStarted {
			typ = EventPartCreated
		}
		out = append(out, p.ev(typ, map[string]any{"messageID": id, "part": maps.Clone(part)}))
	case agent.KindItemDelta:
		if e.Delta == nil {
			return nil
		}
		id, ok := p.itemMessage[e.Delta.ItemID]
		if !ok { // started before what this fold saw: the turn's message
			id, _ = p.messageFor(e, nil)
		}
		var m *message
		m, out = p.ensure(id, "assistant", false, out)
		part := m.part(e.Delta.ItemID) // changed in place: events and snapshots get clones
		if part == nil {
			part = Part{"id": e.Delta.ItemID, "status": string(agent.ItemInProgress)}
		}
		key := deltaKey(e.Delta.Field)
		prev, _ := part[key].(string)
		part[key] = prev + e.Delta.Text
		if part["type"] == nil {
			part["type"] = "text"
		}
		m.setPart(e.Delta.ItemID, part)
		p.itemMessage[e.Delta.ItemID] = id
		m.touched = stamp
		if m.held {
			return out
		}
		out = append(out, p.ev(EventPartUpdated, map[string]any{"messageID": id, "part": maps.Clone(part),
			"delta": map[string]any{"field": string(e.Delta.Field), "text": e.Delta.Text}}))
	case agent.KindApprovalRequested:
		if e.Approval == nil {
			return nil
		}
		a := e.Approval
		perm := map[string]any{"id": a.ID, "sessionId": p.sessionID, "description": a.Title, "status": "pending", "kind": string(a.Kind)}
		if perm["description"] == "" {
			perm["description"] = a.Tool
		}
		if a.Tool != "" {
			perm["toolName"] = a.Tool
		}
		if len(a.Input) > 0 {
			perm["input"] = a.Input
		}
		if a.Question != nil {
			perm["question"] = a.Question
		}
		if !a.Expires.IsZero() {
			perm["expiresAt"] = Timestamp(a.Expires)
		}
		out = append(out, p.ev(EventPermissionCreated, map[string]any{"permission": perm}))
	case agent.KindApprovalResolved:
		if e.Resolution == nil {
			return nil
		}
		r := e.Resolution
		data := map[string]any{"permissionId": r.ApprovalID, "status": permissionStatus(r.Decision), "cause": string(r.Cause)}
		if r.Reason != "" {
			data["reason"] = r.Reason
		}
		out = append(out, p.ev(EventPermissionUpdated, data))
	case agent.KindUsage:
		if e.Usage == nil {
			return nil
		}
		out = append(out, p.ev(EventSessionUpdated, map[string]any{"session": map[string]any{"id": p.sessionID, "usage": *e.Usage}}))
	case agent.KindError:
		if e.Error == nil {
			return nil
		}
		id, _ := p.messageFor(e, nil)
		var m *message
		m, out = p.ensure(id, "assistant", false, out)
		pid := "err_" + strconv.FormatInt(e.Seq, 10)
		part := Part{"id": pid, "type": "error", "content": e.Error.Message, "code": string(e.Error.Code)}
		if e.Error.Retrying {
			part["retrying"] = true
		}
		m.setPart(pid, part)
		m.touched = stamp
		out = append(out, p.ev(EventPartUpdated, map[string]any{"messageID": id, "part": maps.Clone(part)}))
	case agent.KindTurnCompleted:
		out = p.completeAll(out, stamp)
		p.retire()
		turn := map[string]any{"id": e.TurnID}
		if e.Turn != nil {
			turn["status"] = string(e.Turn.Status)
			if e.Turn.Text != "" {
				turn["text"] = e.Turn.Text
			}
		}
		if e.Error != nil {
			turn["error"] = map[string]any{"code": string(e.Error.Code), "message": e.Error.Message}
		}
		out = append(out, p.ev(EventSessionUpdated, map[string]any{"session": map[string]any{
			"id": p.sessionID, "status": "idle", "turn": turn}}))
	case agent.KindSessionEnded:
		out = p.completeAll(out, stamp)
		p.retire()
		p.retired, p.ended = nil, true
		s := map[string]any{"id": p.sessionID, "status": "ended"}
		if e.Session != nil && e.Session.Reason != "" {
			s["reason"] = e.Session.Reason
		}
		if e.Error != nil {
			s["error"] = map[string]any{"code": string(e.Error.Code), "message": e.Error.Message}
		}
		out = append(out, p.ev(EventSessionUpdated, map[string]any{"session": s}))
	}
	return out
}

// completeAll completes every message still open: a turn's end is its
// messages' end, its prompt's too. A prompt's text is sent again with its
// completion: the seed's orchestrator adds a message a moment after its
// mast.message.created, so the parts that came with it (in the same read
// of its socket) found no message, and the prompt would stay empty.
func (p *projector) completeAll(out []Event, stamp int64) []Event {
	for _, m := range p.messages {
		if m.Completed {
			continue
		}
		m.Completed = true
		m.touched = stamp
		if m.held {
			continue
		}
		if m.Role == "user" {
			for _, part := range m.Parts {
				out = append(out, p.ev(EventPartUpdated, map[string]any{"messageID": m.ID, "part": maps.Clone(part)}))
			}
		}
		out = append(out, p.ev(EventMessageCompleted, map[string]any{"messageID": m.ID}))
	}
	return out
}

func permissionStatus(d agent.Decision) string {
	if d == agent.Allow {
		return "approved"
	}
	return "denied"
}

// snapshot is what sync_response has of the conversation: its messages
// changed after since (all, for since <= 0), the retired ones first,
// without the prompts the orchestrator keeps itself.
func (p *projector) snapshot(since int64) []Message {
	return p.list(since, false)
}

// conversation is the whole conversation as Mast messages (get_messages).
func (p *projector) conversation() []Message {
	return p.list(0, true)
}

func (p *projector) list(since int64, withHeld bool) []Message {
	out := []Message{}
	for _, list := range [][]*message{p.done, p.messages} {
		for _, m := range list {
			if (since > 0 && m.touched <= since) || (m.held && !withHeld) {
				continue
			}
			c := m.Message
			c.Parts = make([]Part, len(m.Parts))
			for i, part := range m.Parts {
				c.Parts[i] = maps.Clone(part)
			}
			out = append(out, c)
		}
	}
	return out
}

// deltaKey is the part's key a delta of field adds to.
func deltaKey(field agent.Field) string {
	switch field {
	case agent.FieldText:
		return "content"
	case agent.FieldOutput:
		return "output"
	case agent.FieldInput:
		return "inputText"
	}
	return string(field)
}

// partOf is an item as a message part.
func partOf(it agent.Item) Part {
	p := Part{"id": it.ID, "itemType": string(it.Type), "status": string(it.Status)}
	if it.Text != "" {
		p["content"] = it.Text
	}
	switch it.Type {
	case agent.ItemMessage, agent.ItemUserMessage:
		p["type"] = "text"
		if it.Text == "" {
			p["content"] = ""
		}
	case agent.ItemReasoning:
		p["type"] = "reasoning"
	case agent.ItemToolCall:
		p["type"] = "tool-invocation"
		p["toolUseId"] = it.ID
		if it.Tool != nil {
			p["toolName"] = it.Tool.Name
			if len(it.Tool.Input) > 0 {
				p["input"] = it.Tool.Input
			}
			if it.Tool.Output != "" {
				p["output"] = it.Tool.Output
			}
			if it.Tool.IsError {
				p["isError"] = true
			}
		}
	case agent.ItemCommand:
		p["type"] = "tool-invocation"
		p["toolUseId"] = it.ID
		p["toolName"] = "command"
		if it.Command != nil {
			p["input"] = map[string]any{"command": it.Command.Command}
			if it.Command.Output != "" {
				p["output"] = it.Command.Output
			}
			if it.Command.ExitCode != nil {
				p["exitCode"] = *it.Command.ExitCode
			}
		}
	case agent.ItemFileChange:
		p["type"] = "tool-invocation"
		p["toolUseId"] = it.ID
		p["toolName"] = "file_change"
		p["changes"] = it.Changes
	case agent.ItemPlan:
		p["type"] = "plan"
		p["plan"] = it.Plan
	case agent.ItemQuestion:
		p["type"] = "question"
		p["question"] = it.Question
	}
	return p
}
