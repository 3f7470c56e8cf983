package mast

import (
	"maps"
	"strconv"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
)

// projector turns one session's canonical events, in seq order, into
// mast.* events, and keeps the session's conversation as Mast messages
// (what get_messages and sync_response answer). It is a fold: fed the
// same events it reaches the same state, so a stream that starts mid-log
// first feeds it what came before, without sending.
type projector struct {
	sessionID string
	messages  []*message
	byID      map[string]*message
	// itemMessage is the message each item's part belongs to.
	itemMessage map[string]string
	// touched is, per message, the stamp of the last event that
	// changed it.
	touched map[string]int64
}

type message struct {
	Message
	parts map[string]int // item id → index in Parts
}

func newProjector(sessionID string) *projector {
	return &projector{sessionID: sessionID, byID: map[string]*message{}, itemMessage: map[string]string{},
		touched: map[string]int64{}}
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

// ensure returns the message, creating it (and announcing it) if new.
func (p *projector) ensure(id, role string, out []Event) (*message, []Event) {
	if m, ok := p.byID[id]; ok {
		return m, out
	}
	m := &message{Message: Message{ID: id, Role: role, Parts: []Part{}}, parts: map[string]int{}}
	p.byID[id] = m
	p.messages = append(p.messages, m)
	return m, append(out, p.ev(EventMessageCreated, map[string]any{"message": map[string]any{"id": id, "role": role}}))
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
		s := map[string]any{"id": p.sessionID, "status": "idle"}
		if e.Session != nil {
			s["agentType"] = agentType(e.Session.Agent)
			if e.Session.NativeID != "" {
				s["nativeId"] = e.Session.NativeID
			}
		}
		out = append(out, p.ev(EventSessionUpdated, map[string]any{"session": s}))
	case agent.KindTurnStarted:
		out = append(out, p.ev(EventSessionUpdated, map[string]any{"session": map[string]any{
			"id": p.sessionID, "status": "running", "turnId": e.TurnID}}))
	case agent.KindItemStarted, agent.KindItemCompleted:
		if e.Item == nil {
			return nil
		}
		id, role := p.messageFor(e, e.Item)
		var m *message
		m, out = p.ensure(id, role, out)
		part := partOf(*e.Item)
		m.setPart(e.Item.ID, part)
		p.itemMessage[e.Item.ID] = id
		p.touched[id] = stamp
		typ := EventPartUpdated
		if e.Kind == agent.KindItemStarted {
			typ = EventPartCreated
		}
		out = append(out, p.ev(typ, map[string]any{"messageID": id, "part": maps.Clone(part)}))
		if e.Kind == agent.KindItemCompleted && role == "user" && !m.Completed {
			m.Completed = true
			out = append(out, p.ev(EventMessageCompleted, map[string]any{"messageID": id}))
		}
	case agent.KindItemDelta:
		if e.Delta == nil {
			return nil
		}
		id, ok := p.itemMessage[e.Delta.ItemID]
		if !ok { // started before what this fold saw: the turn's message
			id, _ = p.messageFor(e, nil)
		}
		var m *message
		m, out = p.ensure(id, "assistant", out)
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
		p.touched[id] = stamp
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
		m, out = p.ensure(id, "assistant", out)
		pid := "err_" + strconv.FormatInt(e.Seq, 10)
		part := Part{"id": pid, "type": "error", "content": e.Error.Message, "code": string(e.Error.Code)}
		if e.Error.Retrying {
			part["retrying"] = true
		}
		m.setPart(pid, part)
		p.touched[id] = stamp
		out = append(out, p.ev(EventPartUpdated, map[string]any{"messageID": id, "part": maps.Clone(part)}))
	case agent.KindTurnCompleted:
		out = p.completeAll(out, stamp)
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
// messages' end.
func (p *projector) completeAll(out []Event, stamp int64) []Event {
	for _, m := range p.messages {
		if !m.Completed {
			m.Completed = true
			p.touched[m.ID] = stamp
			out = append(out, p.ev(EventMessageCompleted, map[string]any{"messageID": m.ID}))
		}
	}
	return out
}

func permissionStatus(d agent.Decision) string {
	if d == agent.Allow {
		return "approved"
	}
	return "denied"
}

// snapshot is the conversation as Mast messages; since > 0 keeps only the
// messages changed after that stamp.
func (p *projector) snapshot(since int64) []Message {
	out := []Message{}
	for _, m := range p.messages {
		if since > 0 && p.touched[m.ID] <= since {
			continue
		}
		c := m.Message
		c.Parts = make([]Part, len(m.Parts))
		for i, part := range m.Parts {
			c.Parts[i] = maps.Clone(part)
		}
		out = append(out, c)
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
