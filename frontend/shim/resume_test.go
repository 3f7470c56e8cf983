package shim_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/shimclient"
)

// At a decision the backend takes a checkpoint (the agent goes on), then
// pauses; the resume from that checkpoint is a new run (new runId,
// sequence from 1, lifecycle resumed) of the same conversation, which
// asks the decision again, and finishes once it is answered.
func TestCheckpointPauseResume(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	var handle shim.AgentHandle
	h.Must(200, "POST", "/spawn", brief("REQUEST_APPROVAL then report"), &handle)
	first := events.Until("decision/tool_approval", wait)
	d := first[len(first)-1]

	var cp shim.SerializedAgentState
	h.Must(200, "POST", "/checkpoint", map[string]any{"decisionId": d.Str("decisionId")}, &cp)
	if cp.SerializedBy != "decision_checkpoint" || cp.AgentID != agentID || cp.SessionID != handle.SessionID ||
		cp.Checkpoint.SDK != "mock" || cp.Checkpoint.ScriptPosition == nil || *cp.Checkpoint.ScriptPosition != 1 ||
		!slices.Equal(cp.PendingDecisionIDs, []string{d.Str("decisionId")}) || cp.LastSequence != d.SourceSequence ||
		!strings.HasSuffix(cp.SerializedAt, "Z") || cp.EstimatedSizeBytes == 0 {
		t.Fatalf("checkpoint %+v", cp)
	}
	var snap map[string]any
	if err := json.Unmarshal(cp.BriefSnapshot, &snap); err != nil || snap["agentId"] != agentID || snap["someFutureKey"] == nil {
		t.Errorf("briefSnapshot %s: %v", cp.BriefSnapshot, err)
	}
	var health shim.Health
	h.Must(200, "GET", "/health", nil, &health)
	if health.AgentStatus != "waiting_on_human" {
		t.Errorf("a checkpoint stopped the agent: %s", health.AgentStatus)
	}

	var paused shim.SerializedAgentState
	h.Must(200, "POST", "/pause", handle, &paused)
	if paused.SerializedBy != "pause" || paused.SessionID != handle.SessionID || !slices.Contains(paused.PendingDecisionIDs, d.Str("decisionId")) {
		t.Errorf("pause state %+v", paused)
	}
	p := events.Until("lifecycle", wait)
	if last := p[len(p)-1]; last.Str("action") != "paused" || last.RunID != d.RunID {
		t.Errorf("pause event %+v", last)
	}
	h.Must(200, "GET", "/health", nil, &health)
	if health.AgentStatus != "paused" {
		t.Errorf("after pause: %s", health.AgentStatus)
	}

	var resumed shim.AgentHandle
	h.Must(200, "POST", "/resume", cp, &resumed)
	if resumed.Status != "running" || resumed.SessionID != handle.SessionID || resumed.ID != agentID {
		t.Errorf("resumed handle %+v", resumed)
	}
	again := events.Until("decision/tool_approval", wait)
	if again[0].Str("action") != "resumed" || again[0].SourceSequence != 1 || again[0].RunID == d.RunID {
		t.Errorf("resumed run starts %+v", again[0])
	}
	h.Must(200, "POST", "/resolve", map[string]any{"decisionId": again[len(again)-1].Str("decisionId"),
		"resolution": map[string]any{"type": "tool_approval", "action": "approve"}}, nil)
	done := events.Until("completion", wait)
	// The same conversation: its second turn.
	if s := done[len(done)-1].Str("summary"); !strings.Contains(s, "Mock reply to turn 2") {
		t.Errorf("resumed completion %q", s)
	}
}

// A checkpoint resumes in another shim process too: the mock continues
// from the script position it names.
func TestResumeInAnotherShim(t *testing.T) {
	a := start(t, newMock(), nil)
	ea := a.Events("")
	a.Must(200, "POST", "/spawn", brief("one"), nil)
	ea.Until("completion", wait)
	var cp shim.SerializedAgentState
	a.Must(200, "POST", "/checkpoint", map[string]any{"decisionId": ""}, &cp)
	if *cp.Checkpoint.ScriptPosition != 1 || len(cp.PendingDecisionIDs) != 0 {
		t.Fatalf("checkpoint %+v", cp)
	}
	b := start(t, newMock(), nil)
	eb := b.Events("")
	b.Must(200, "POST", "/resume", cp, nil)
	done := eb.Until("completion", wait)
	if s := done[len(done)-1].Str("summary"); !strings.Contains(s, "Mock reply to turn 2") {
		t.Errorf("completion in the other shim %q", s)
	}
	var again shim.SerializedAgentState
	b.Must(200, "POST", "/checkpoint", map[string]any{"decisionId": ""}, &again)
	if *again.Checkpoint.ScriptPosition != 2 || again.SessionID != cp.SessionID {
		t.Errorf("second checkpoint %+v", again)
	}
}

// A resume with another assignment (workstream or description changed)
// is told it is a continuation.
func TestResumeWithNewAssignment(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("first task"), nil)
	events.Until("completion", wait)
	var cp shim.SerializedAgentState
	h.Must(200, "POST", "/checkpoint", map[string]any{}, &cp)
	next := brief("second task")
	cp.BriefSnapshot, _ = json.Marshal(next)
	h.Must(200, "POST", "/resume", cp, nil)
	done := events.Until("completion", wait)
	if s := done[len(done)-1].Str("summary"); !strings.Contains(s, "Your previous assignment is complete") {
		t.Errorf("continuation completion %q", s)
	}
}

// Context injections and brief updates reach the agent: steered into the
// running turn, or as a turn of their own when it is idle.
func TestInjectContextAndUpdateBrief(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	var accepted map[string]string
	h.Must(200, "POST", "/inject-context", map[string]any{"content": "before any run", "format": "plain", "priority": "required",
		"snapshotVersion": 1, "estimatedTokens": 3}, &accepted)
	if accepted["status"] != "accepted" || accepted["delivery"] != "queued" {
		t.Errorf("inject before a run: %v", accepted)
	}
	h.Must(200, "POST", "/spawn", brief("REQUEST_APPROVAL"), nil)
	d := events.Until("decision/tool_approval", wait)
	h.Must(200, "POST", "/inject-context", map[string]any{"content": "the API moved to v2", "format": "markdown", "priority": "recommended"}, &accepted)
	if accepted["delivery"] != "steered" {
		t.Errorf("inject while the turn runs: %v", accepted)
	}
	h.Must(200, "POST", "/resolve", map[string]any{"decisionId": d[len(d)-1].Str("decisionId"),
		"resolution": map[string]any{"type": "tool_approval", "action": "approve"}}, nil)
	done := events.Until("completion", wait)
	s := done[len(done)-1].Str("summary")
	if !strings.Contains(s, "the API moved to v2") {
		t.Errorf("the steered context is not in the reply: %q", s)
	}
	// The first prompt carried the queued context: the mock quotes it.
	if !strings.Contains(s, "before any run") && !slices.ContainsFunc(done, func(e shimclient.Envelope) bool {
		return strings.Contains(e.Str("message"), "before any run")
	}) {
		t.Errorf("the queued context did not reach the first turn: %q", s)
	}
	h.Must(200, "POST", "/update-brief", map[string]any{"handle": map[string]any{"id": agentID},
		"changes": map[string]any{"description": "Now also write docs"}}, &accepted)
	if accepted["delivery"] != "new_turn" {
		t.Errorf("update while idle: %v", accepted)
	}
	next := events.Until("completion", wait)
	if s := next[len(next)-1].Str("summary"); !strings.Contains(s, "Brief update") || !strings.Contains(s, "Now also write docs") {
		t.Errorf("the update's turn: %q", s)
	}
	var cp shim.SerializedAgentState
	h.Must(200, "POST", "/checkpoint", map[string]any{}, &cp)
	var snap map[string]any
	_ = json.Unmarshal(cp.BriefSnapshot, &snap)
	if snap["description"] != "Now also write docs" {
		t.Errorf("the checkpoint's brief is not updated: %v", snap["description"])
	}
}
