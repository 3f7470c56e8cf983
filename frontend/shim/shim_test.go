package shim_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/shimclient"
)

// A basic run: the spawn reply names the agent, then every event of the
// turn, valid to the backend, in order, ending in a success completion
// that lists the artifact the run produced.
func TestBasicRun(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	var handle shim.AgentHandle
	h.Must(200, "POST", "/spawn", brief("Write the notes"), &handle)
	if handle.ID != agentID || handle.Status != "running" || handle.SessionID == "" || handle.PluginName == "" {
		t.Fatalf("handle %+v", handle)
	}
	seen := events.Until("completion", wait)
	if seen[0].Type() != "lifecycle" || seen[0].Str("action") != "started" || seen[0].SourceSequence != 1 {
		t.Fatalf("first event %+v", seen[0])
	}
	got := types(seen)
	for _, want := range []string{"status", "progress", "tool_call", "artifact", "completion"} {
		if !slices.Contains(got, want) {
			t.Errorf("no %s event in %v", want, got)
		}
	}
	var artifact shimclient.Envelope
	calls := map[string][]string{}
	for _, e := range seen {
		switch e.Type() {
		case "artifact":
			artifact = e
		case "tool_call":
			calls[e.Str("toolCallId")] = append(calls[e.Str("toolCallId")], e.Str("toolName")+":"+e.Str("phase"))
		}
	}
	if artifact.Str("name") != "mock-notes.md" || artifact.Str("kind") != "document" || artifact.Str("workstream") != "testing" {
		t.Errorf("artifact %+v", artifact.Event)
	}
	for id, phases := range calls { // each call opens and closes under one id
		if len(phases) != 2 || !strings.HasSuffix(phases[0], ":requested") || !strings.HasSuffix(phases[1], ":completed") {
			t.Errorf("tool call %s: %v", id, phases)
		}
	}
	done := seen[len(seen)-1]
	produced, _ := done.Event["artifactsProduced"].([]any)
	if done.Str("outcome") != "success" || !strings.Contains(done.Str("summary"), "Mock reply to turn 1") ||
		len(produced) != 1 || produced[0] != artifact.Str("artifactId") {
		t.Errorf("completion %+v", done.Event)
	}
	// The server counts an event delivered once its write returns, a
	// moment after this client may have read it.
	var health shim.Health
	for deadline := time.Now().Add(wait); ; time.Sleep(5 * time.Millisecond) {
		h.Must(200, "GET", "/health", nil, &health)
		if health.PendingEventBufferSize == 0 || time.Now().After(deadline) {
			break
		}
	}
	if health.Status != "healthy" || health.AgentStatus != "completed" || health.PendingEventBufferSize != 0 ||
		!strings.HasSuffix(health.ResourceUsage.CollectedAt, "Z") {
		t.Errorf("health %+v", health)
	}
}

// A tool approval (REQUEST_APPROVAL in the brief) waits on a human:
// /resolve approves it through the durable approvals, the tool call runs,
// the reply comes after the follow-on events, and a second answer or an
// unknown decision is told, not failed.
func TestDecisionResolved(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("Search, REQUEST_APPROVAL first"), nil)
	seen := events.Until("decision/tool_approval", wait)
	d := seen[len(seen)-1]
	var health shim.Health
	h.Must(200, "GET", "/health", nil, &health)
	if health.AgentStatus != "waiting_on_human" {
		t.Errorf("status while waiting: %s", health.AgentStatus)
	}
	if d.Str("toolName") != "mock_search" {
		t.Errorf("decision %+v", d.Event)
	}
	var reply map[string]string
	h.Must(200, "POST", "/resolve", map[string]any{"handle": map[string]any{"id": agentID}, "decisionId": d.Str("decisionId"),
		"resolution": map[string]any{"type": "tool_approval", "action": "approve", "actionKind": "update"}}, &reply)
	if reply["status"] != "resolved" || reply["decisionId"] != d.Str("decisionId") {
		t.Fatalf("resolve: %v", reply)
	}
	// The resolution's status event is out (the server sends it before
	// the reply; this client's reader may still be on its way to it).
	resolved := func(e shimclient.Envelope) bool {
		return e.Type() == "status" && strings.Contains(e.Str("message"), "resolved: allow")
	}
	for deadline := time.Now().Add(wait); !slices.ContainsFunc(events.Seen(), resolved); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no resolution event: %v", types(events.Seen()))
		}
	}
	rest := events.Until("completion", wait)
	var call shimclient.Envelope
	for _, e := range rest {
		if e.Type() == "tool_call" && e.Str("toolName") == "mock_search" && e.Str("phase") == "completed" {
			call = e
		}
	}
	if call.Event == nil || call.Event["approved"] != true {
		t.Errorf("the approved call did not complete: %v", types(rest))
	}
	if c := rest[len(rest)-1]; !strings.Contains(c.Str("summary"), "was allowed") {
		t.Errorf("completion %q", c.Str("summary"))
	}
	h.Must(200, "POST", "/resolve", map[string]any{"decisionId": d.Str("decisionId"),
		"resolution": map[string]any{"type": "tool_approval", "action": "reject"}}, &reply)
	if reply["status"] != "already_resolved" {
		t.Errorf("second resolve: %v", reply)
	}
	h.Must(200, "POST", "/resolve", map[string]any{"decisionId": "nope",
		"resolution": map[string]any{"type": "tool_approval", "action": "approve"}}, &reply)
	if reply["status"] != "not_found" {
		t.Errorf("unknown decision: %v", reply)
	}
}

// A rejected tool approval: the call fails unapproved and did not run.
func TestDecisionRejected(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("REQUEST_APPROVAL"), nil)
	d := events.Until("decision/tool_approval", wait)
	h.Must(200, "POST", "/resolve", map[string]any{"decisionId": d[len(d)-1].Str("decisionId"),
		"resolution": map[string]any{"type": "tool_approval", "action": "reject", "rationale": "too risky"}}, nil)
	rest := events.Until("completion", wait)
	i := slices.IndexFunc(rest, func(e shimclient.Envelope) bool { return e.Type() == "tool_call" && e.Str("toolName") == "mock_search" })
	if i < 0 || rest[i].Str("phase") != "failed" || rest[i].Event["approved"] != false {
		t.Fatalf("rejected call: %v", rest)
	}
	if s := rest[len(rest)-1].Str("summary"); !strings.Contains(s, "denied: too risky") {
		t.Errorf("completion %q", s)
	}
}

// The agent's question (ASK_QUESTION) is an option decision with every
// key the backend requires; the chosen option reaches the agent.
func TestOptionDecision(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("ASK_QUESTION about colours"), nil)
	seen := events.Until("decision/option", wait)
	d := seen[len(seen)-1]
	opts, _ := d.Event["options"].([]any)
	if len(opts) != 3 {
		t.Fatalf("options %v", d.Event["options"])
	}
	chosen := opts[1].(map[string]any)
	h.Must(422, "POST", "/resolve", map[string]any{"decisionId": d.Str("decisionId"),
		"resolution": map[string]any{"type": "option", "chosenOptionId": "purple", "rationale": ""}}, nil)
	h.Must(200, "POST", "/resolve", map[string]any{"decisionId": d.Str("decisionId"),
		"resolution": map[string]any{"type": "option", "chosenOptionId": chosen["id"], "rationale": "", "actionKind": "review"}}, nil)
	done := events.Until("completion", wait)
	if s := done[len(done)-1].Str("summary"); !strings.Contains(s, "You chose: "+chosen["label"].(string)) {
		t.Errorf("completion %q, chose %v", s, chosen)
	}
}

// Spawn while a run works is 409; kill ends it (lifecycle killed, clean),
// and a new spawn is a new run whose sequence starts at 1.
func TestKillAndRespawn(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("REQUEST_APPROVAL"), nil)
	events.Until("decision/tool_approval", wait)
	h.Must(409, "POST", "/spawn", brief("again"), nil)
	var kill shim.KillResponse
	h.Must(200, "POST", "/kill", map[string]any{"grace": true}, &kill)
	if !kill.CleanShutdown || kill.State != nil {
		t.Errorf("kill %+v", kill)
	}
	killed := events.Until("lifecycle", wait)
	for killed[len(killed)-1].Str("action") != "killed" {
		killed = events.Until("lifecycle", wait)
	}
	var health shim.Health
	h.Must(200, "GET", "/health", nil, &health)
	if health.AgentStatus != "completed" {
		t.Errorf("after kill: %s", health.AgentStatus)
	}
	h.Must(200, "POST", "/spawn", brief("second run"), nil)
	second := events.Until("completion", wait)
	if second[0].Str("action") != "started" || second[0].SourceSequence != 1 || second[0].RunID == killed[0].RunID {
		t.Errorf("second run starts %+v", second[0])
	}
	var force shim.KillResponse
	h.Must(200, "POST", "/kill", map[string]any{"grace": false, "graceTimeoutMs": 2000}, &force)
	if force.CleanShutdown {
		t.Errorf("a forced kill reported clean")
	}
}

// Bad bodies and calls without an agent get clear errors with a detail.
func TestBadBodies(t *testing.T) {
	h := start(t, newMock(), nil)
	for _, path := range []string{"/kill", "/pause", "/checkpoint", "/update-brief"} {
		h.Must(404, "POST", path, `{}`, nil)
	}
	h.Must(404, "POST", "/resolve", map[string]any{"decisionId": "d", "resolution": map[string]any{"type": "tool_approval", "action": "approve"}}, nil)
	h.Must(422, "POST", "/resume", map[string]any{}, nil) // a resume needs no run, but a state
	h.Must(404, "GET", "/nowhere", nil, nil)
	h.Must(422, "POST", "/spawn", `{"agentId":`, nil)
	h.Must(422, "POST", "/spawn", `{"role":"no id"}`, nil)
	h.Must(422, "POST", "/spawn", `[1,2]`, nil)
	big := `{"agentId":"a","description":"` + strings.Repeat("x", shim.MaxBody) + `"}`
	h.Must(http.StatusRequestEntityTooLarge, "POST", "/spawn", big, nil)
	h.Must(200, "POST", "/spawn", brief("fine"), nil)
	for _, bad := range []any{
		map[string]any{"resolution": map[string]any{"type": "tool_approval", "action": "approve"}},
		map[string]any{"decisionId": "d", "resolution": map[string]any{"type": "maybe"}},
		map[string]any{"decisionId": "d", "resolution": map[string]any{"type": "tool_approval", "action": "shrug"}},
		map[string]any{"decisionId": "d", "resolution": map[string]any{"type": "option"}},
	} {
		h.Must(422, "POST", "/resolve", bad, nil)
	}
	h.Must(422, "POST", "/kill", `{"grace":"yes"}`, nil)
	h.Must(422, "POST", "/inject-context", `{"content":""}`, nil)
	h.Must(422, "POST", "/update-brief", `{"changes":[1]}`, nil)
	h.Must(422, "POST", "/resume", `{"agentId":"a"}`, nil)
	var health shim.Health
	h.Must(200, "GET", "/health", nil, &health)
	if health.Status != "healthy" {
		t.Errorf("health after bad bodies %+v", health)
	}
}

// alwaysApprove allows for the rest of the session where the approval
// offers it: the next call of the tool is not asked again.
func TestAlwaysApprove(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("REQUEST_APPROVAL"), nil)
	d := events.Until("decision/tool_approval", wait)
	h.Must(200, "POST", "/resolve", map[string]any{"decisionId": d[len(d)-1].Str("decisionId"),
		"resolution": map[string]any{"type": "tool_approval", "action": "approve", "alwaysApprove": true}}, nil)
	events.Until("completion", wait)
	h.Must(200, "POST", "/update-brief", map[string]any{"changes": map[string]any{"description": "REQUEST_APPROVAL again"}}, nil)
	next := events.Until("completion", wait)
	if slices.ContainsFunc(next, func(e shimclient.Envelope) bool { return e.Type() == "decision/tool_approval" }) {
		t.Errorf("asked again after alwaysApprove: %v", types(next))
	}
}

// /health reports what Config.Usage measures, stamped with its time; when
// Usage fails it falls back to the shim's own memory instead of failing.
func TestHealthReportsUsage(t *testing.T) {
	var fail atomic.Bool
	h := start(t, newMock(), func(c *shim.Config) {
		c.Usage = func(context.Context) (shim.ResourceUsage, error) {
			if fail.Load() {
				return shim.ResourceUsage{}, errors.New("no /proc here")
			}
			return shim.ResourceUsage{CPUPercent: 12.5, MemoryMb: 300, DiskMb: 42}, nil
		}
	})
	var health shim.Health
	h.Must(200, "GET", "/health", nil, &health)
	if u := health.ResourceUsage; u.CPUPercent != 12.5 || u.MemoryMb != 300 || u.DiskMb != 42 || !strings.HasSuffix(u.CollectedAt, "Z") {
		t.Fatalf("usage %+v", u)
	}
	fail.Store(true)
	h.Must(200, "GET", "/health", nil, &health)
	if u := health.ResourceUsage; u.MemoryMb <= 0 || u.DiskMb != 0 || u.CPUPercent != 0 {
		t.Fatalf("usage after a failed measure %+v", u)
	}
}
