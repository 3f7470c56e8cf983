package opencode

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// permissionAsked maps a permission request onto an approval, once; its
// item is the tool part of the request's call.
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

// deniedPart says whether the tool call of part was refused.
func (m *mapper) deniedPart(part string) bool {
	for call, p := range m.calls {
		if p == part && m.denied[call] {
			return true
		}
	}
	return false
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

// permissionTitle is one line for a person: "bash: echo hello".
func permissionTitle(r *oc.PermissionRequest) string {
	what := strings.Join(r.Patterns, ", ")
	var meta struct {
		Command  string `json:"command"`
		Filepath string `json:"filepath"`
	}
	_ = json.Unmarshal(r.Metadata, &meta)
	switch {
	case meta.Command != "":
		what = meta.Command
	case meta.Filepath != "":
		what = meta.Filepath
	}
	if what == "" {
		return r.Permission
	}
	return r.Permission + ": " + what
}

// sortByCreated orders approval ids as they were asked (then by id).
func sortByCreated(ids []string, approvals map[string]*approvalState) {
	slices.SortFunc(ids, func(a, b string) int {
		if c := approvals[a].approval.Created.Compare(approvals[b].approval.Created); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
}
