package shim

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"strings"
	"time"

	"github.com/tetherhq/tether/agent"
)

// maxText is the cap of texts carried in status, completion and error
// events, as the reference shims': 497 characters and "...".
const maxText = 500

// mapper turns one run's canonical events into AgentEvents. It tracks
// open tool calls by the canonical item id (each gets a toolCallId of its
// own, and its duration), the artifacts the run produced and its open
// decisions. It is the same for every agent: their differences are in
// the canonical events already. It is a fold: the ids it makes come from
// the run's id and the items', so every reader of the run's events makes
// the same AgentEvents.
type mapper struct {
	agentID, workstream string
	runID               string

	calls     map[string]openCall
	artifacts []string
	decisions map[string]string // open, by decision id: the item asked about
	// edited is the input a call runs with, by item id, where its
	// decision's allow edited it (a modify's modifiedArgs): the tool_call
	// that completes tells what ran, not what the model asked.
	edited map[string]any
	turns  int // turns started in this run
	// errored says an error event already told the turn's failure.
	errored bool
}

// mapperState is what a mapper has folded at some event: a reader that
// starts there takes it up instead of folding the run from its start.
type mapperState struct {
	calls     map[string]openCall
	artifacts []string
	decisions map[string]string
	edited    map[string]any
	turns     int
	errored   bool
}

// state is the mapper's state now, its own to keep: the artifacts are
// only ever appended to, so they are shared up to their length.
func (m *mapper) state() mapperState {
	return mapperState{calls: maps.Clone(m.calls), artifacts: m.artifacts[:len(m.artifacts):len(m.artifacts)],
		decisions: maps.Clone(m.decisions), edited: maps.Clone(m.edited), turns: m.turns, errored: m.errored}
}

// restore takes up st.
func (m *mapper) restore(st mapperState) {
	m.calls, m.artifacts, m.decisions, m.edited = maps.Clone(st.calls), st.artifacts, maps.Clone(st.decisions), maps.Clone(st.edited)
	m.turns, m.errored = st.turns, st.errored
}

type openCall struct {
	id, name string
	input    any
	started  time.Time
}

func newMapper(agentID, workstream, runID string) *mapper {
	return &mapper{agentID: agentID, workstream: workstream, runID: runID,
		calls: map[string]openCall{}, decisions: map[string]string{}, edited: map[string]any{}}
}

// artifactEvent is an artifact the caller may upload before sending.
type artifactEvent struct {
	event    Event
	mimeType string
	path     string // the file, as the agent named it
}

// mapped is what one canonical event becomes.
type mapped struct {
	events    []Event
	artifacts map[int]artifactEvent // index into events → the artifact to upload
}

func (m *mapper) ev(typ string, kv ...any) Event {
	e := Event{"type": typ, "agentId": m.agentID}
	for i := 0; i+1 < len(kv); i += 2 {
		e[kv[i].(string)] = kv[i+1]
	}
	return e
}

func (m *mapper) status(msg string) Event { return m.ev("status", "message", clip(msg)) }

// Map is the AgentEvents of one canonical event.
func (m *mapper) Map(e agent.Event) mapped {
	var out mapped
	add := func(ev ...Event) { out.events = append(out.events, ev...) }
	switch e.Kind {
	case agent.KindTurnStarted:
		m.turns++
		m.errored = false
		add(m.status(fmt.Sprintf("Turn %d started", m.turns)))
	case agent.KindItemStarted:
		add(m.itemStarted(e.Time, e.Item)...)
	case agent.KindItemCompleted:
		evs, arts := m.itemCompleted(e.Time, e.Item)
		for _, a := range arts {
			if out.artifacts == nil {
				out.artifacts = map[int]artifactEvent{}
			}
			out.artifacts[len(out.events)+len(evs)] = a
			evs = append(evs, a.event)
		}
		add(evs...)
	case agent.KindApprovalRequested:
		add(m.decision(e.Approval))
	case agent.KindApprovalResolved:
		r := e.Resolution
		if item, open := m.decisions[r.ApprovalID]; open && item != "" && r.Decision == agent.Allow && len(r.Input) > 0 {
			m.edited[item] = objectOf(r.Input)
		}
		delete(m.decisions, r.ApprovalID)
		msg := fmt.Sprintf("Decision %s resolved: %s", r.ApprovalID, r.Decision)
		if r.Cause != agent.CauseClient {
			msg += " (" + string(r.Cause) + ")"
		}
		add(m.status(msg))
	case agent.KindError:
		add(m.errorEvent(e.Error, e.Error.Retrying))
	case agent.KindTurnCompleted:
		add(m.turnCompleted(e)...)
	}
	return out
}

func (m *mapper) itemStarted(at time.Time, it *agent.Item) []Event {
	name, input, ok := toolOf(it)
	if !ok {
		return nil
	}
	c := openCall{id: derivedID(m.runID, "tool", it.ID), name: name, input: input, started: at}
	m.calls[it.ID] = c
	return []Event{m.ev("tool_call", "toolCallId", c.id, "toolName", name, "phase", "requested", "input", input, "approved", true)}
}

// toolOf is the tool name and input of a tool-like item: a tool call, a
// shell command (Bash) or a file change (Edit).
func toolOf(it *agent.Item) (name string, input any, ok bool) {
	switch {
	case it.Type == agent.ItemToolCall && it.Tool != nil:
		return it.Tool.Name, objectOf(it.Tool.Input), true
	case it.Type == agent.ItemCommand && it.Command != nil:
		return "Bash", map[string]any{"command": it.Command.Command}, true
	case it.Type == agent.ItemFileChange:
		paths := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			paths = append(paths, c.Path)
		}
		in := map[string]any{"files": paths}
		if len(paths) == 1 {
			in["file_path"] = paths[0]
		}
		return "Edit", in, true
	}
	return "", nil, false
}

// emptyInput says whether a tool input carries nothing yet.
func emptyInput(in any) bool {
	m, ok := in.(map[string]any)
	if !ok {
		return in == nil
	}
	for _, v := range m {
		if s, isStr := v.(string); !isStr || s != "" {
			if l, isList := v.([]string); !isList || len(l) > 0 {
				return false
			}
		}
	}
	return true
}

// objectOf is raw JSON as an object: the backend wants objects for tool
// input; anything else is wrapped.
func objectOf(raw json.RawMessage) map[string]any {
	var obj map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil || obj == nil {
		if len(raw) == 0 {
			return map[string]any{}
		}
		var v any
		_ = json.Unmarshal(raw, &v)
		return map[string]any{"value": v}
	}
	return obj
}

func (m *mapper) itemCompleted(at time.Time, it *agent.Item) ([]Event, []artifactEvent) {
	switch it.Type {
	case agent.ItemMessage:
		if strings.TrimSpace(it.Text) == "" {
			return nil, nil
		}
		return []Event{m.status(it.Text)}, nil
	case agent.ItemPlan:
		done := 0
		for _, s := range it.Plan {
			if s.Status == "completed" {
				done++
			}
		}
		var pct any // null: a plan of no steps has no percentage
		if len(it.Plan) > 0 {
			pct = float64(done) * 100 / float64(len(it.Plan))
		}
		return []Event{m.ev("progress", "operationId", it.ID,
			"description", fmt.Sprintf("Plan: %d/%d completed", done, len(it.Plan)), "progressPct", pct)}, nil
	}
	name, input, ok := toolOf(it)
	if !ok {
		return nil, nil
	}
	c, open := m.calls[it.ID]
	if !open { // completed without a start: one event tells both
		c = openCall{id: derivedID(m.runID, "tool", it.ID), name: name, input: input, started: at}
	}
	delete(m.calls, it.ID)
	if !emptyInput(input) { // the input may have streamed in after the start
		c.input = input
	}
	if in, ok := m.edited[it.ID]; ok {
		c.input = in
		delete(m.edited, it.ID)
	}
	phase := "completed"
	if it.Status != agent.ItemDone {
		phase = "failed"
	}
	ev := m.ev("tool_call", "toolCallId", c.id, "toolName", c.name, "phase", phase, "input", c.input,
		"approved", it.Status != agent.ItemDeclined, "durationMs", wallMillis(c.started, at))
	if out := outputOf(it); out != nil {
		ev["output"] = out
	}
	evs := []Event{ev}
	var arts []artifactEvent
	if it.Type == agent.ItemFileChange && it.Status == agent.ItemDone {
		for _, ch := range it.Changes {
			if ch.Kind == agent.ChangeDelete {
				continue
			}
			arts = append(arts, m.artifact(at, it.ID, ch.Path))
		}
	}
	return evs, arts
}

func outputOf(it *agent.Item) any {
	switch {
	case it.Tool != nil:
		if it.Tool.IsError {
			return map[string]any{"error": it.Tool.Output}
		}
		return map[string]any{"content": it.Tool.Output}
	case it.Command != nil:
		out := map[string]any{"stdout": it.Command.Output}
		if it.Command.ExitCode != nil {
			out["exit_code"] = *it.Command.ExitCode
		}
		return out
	case it.Type == agent.ItemFileChange:
		return map[string]any{"success": it.Status == agent.ItemDone}
	}
	return nil
}

// wallMillis is the milliseconds from start to end by their wall clock
// readings alone: a live event's time also carries the monotonic clock,
// a logged one's does not, and a run replayed from the log must give the
// same durations as it did live.
func wallMillis(start, end time.Time) int64 {
	return max(end.Round(0).Sub(start.Round(0)).Milliseconds(), 0)
}

func (m *mapper) artifact(at time.Time, itemID, p string) artifactEvent {
	id := derivedID(m.runID, "artifact", itemID, p)
	m.artifacts = append(m.artifacts, id)
	mime := mimeTypes[strings.ToLower(path.Ext(p))]
	ev := m.ev("artifact", "artifactId", id, "name", path.Base(p), "kind", ArtifactKind(p), "workstream", m.workstream,
		"status", "draft", "qualityScore", 0.5, "uri", p,
		"provenance", map[string]any{"createdBy": m.agentID, "createdAt": utc(at), "sourcePath": p})
	if mime != "" {
		ev["mimeType"] = mime
	}
	return artifactEvent{event: ev, mimeType: mime, path: p}
}

func (m *mapper) decision(a *agent.Approval) Event {
	m.decisions[a.ID] = a.ItemID
	if a.Kind == agent.ApprovalQuestion && a.Question != nil {
		opts := make([]map[string]any, 0, len(a.Question.Options))
		for _, o := range a.Question.Options {
			opts = append(opts, map[string]any{"id": o.ID, "label": o.Label, "description": o.Label})
		}
		return m.ev("decision", "subtype", "option", "decisionId", a.ID, "title", clip(a.Question.Prompt),
			"summary", clip(a.Title), "severity", "medium", "confidence", 0.5, "blastRadius", "unknown",
			"options", opts, "affectedArtifactIds", []string{}, "requiresRationale", false)
	}
	return m.ev("decision", "subtype", "tool_approval", "decisionId", a.ID, "toolName", a.Tool,
		"toolArgs", objectOf(a.Input), "severity", "medium", "blastRadius", "unknown",
		"affectedArtifactIds", []string{}, "reasoning", clip(a.Title))
}

// errorEvent maps a canonical error; recoverable when the agent retries.
func (m *mapper) errorEvent(e *agent.Error, recoverable bool) Event {
	category := map[agent.ErrorCode]string{agent.ErrorAPI: "provider", agent.ErrorTurnLimit: "timeout",
		agent.ErrorTool: "tool", agent.ErrorAgent: "model"}[e.Code]
	if category == "" {
		category = "internal"
	}
	severity := "high"
	if recoverable {
		severity = "warning"
	}
	if !recoverable {
		m.errored = true
	}
	return m.ev("error", "severity", severity, "message", clip(e.Message), "category", category,
		"recoverable", recoverable, "errorCode", string(e.Code))
}

// turnCompleted is the turn's end as a completion (and an error first when
// it failed and no error told it yet). An interrupted turn's end is told
// by whoever interrupted it (pause, kill).
func (m *mapper) turnCompleted(e agent.Event) []Event {
	t := e.Turn
	var out []Event
	outcome := "success"
	switch t.Status {
	case agent.TurnInterrupted:
		return nil
	case agent.TurnFailed:
		outcome = "abandoned"
		if e.Error != nil && e.Error.Code == agent.ErrorTurnLimit {
			outcome = "max_turns"
		}
		if e.Error != nil && !m.errored {
			out = append(out, m.errorEvent(e.Error, false))
		}
	}
	summary := t.Text
	if summary == "" {
		summary = map[string]string{"success": "Turn completed", "abandoned": "Turn failed", "max_turns": "Turn limit reached"}[outcome]
	}
	decisions := make([]string, 0, len(m.decisions))
	for id := range m.decisions {
		decisions = append(decisions, id)
	}
	ev := m.ev("completion", "summary", clip(summary), "outcome", outcome,
		"artifactsProduced", append([]string{}, m.artifacts...), "decisionsNeeded", decisions)
	if e.Error != nil {
		ev["reason"] = clip(e.Error.Message)
	}
	return append(out, ev)
}

// clip cuts s to maxText characters, as the reference does.
func clip(s string) string {
	if r := []rune(s); len(r) > maxText {
		return string(r[:maxText-3]) + "..."
	}
	return s
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
