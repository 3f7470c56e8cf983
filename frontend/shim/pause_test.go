package shim_test

import (
	"slices"
	"testing"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/shimclient"
)

// A pause while a decision is open stops the agent where it stands: the
// run's stream goes from the decision straight to lifecycle paused, with
// nothing of the agent's stopping (the decision's denial, the call's
// failure, an error or a completion) between, and the state still lists
// the decision. The resumed run asks it again.
func TestPauseReportsOnlyPaused(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	var handle shim.AgentHandle
	h.Must(200, "POST", "/spawn", brief("REQUEST_APPROVAL then report"), &handle)
	first := events.Until("decision/tool_approval", wait)
	d := first[len(first)-1]
	var paused shim.SerializedAgentState
	h.Must(200, "POST", "/pause", handle, &paused)
	if !slices.Equal(paused.PendingDecisionIDs, []string{d.Str("decisionId")}) || paused.LastSequence != d.SourceSequence+1 {
		t.Errorf("pause state: pending %v, lastSequence %d (the decision is %d)", paused.PendingDecisionIDs, paused.LastSequence, d.SourceSequence)
	}
	h.Must(200, "POST", "/resume", paused, nil)
	rest := events.Until("decision/tool_approval", wait)
	i := slices.IndexFunc(rest, func(e shimclient.Envelope) bool { return e.RunID != d.RunID })
	if i != 1 || rest[0].Str("action") != "paused" || rest[1].Str("action") != "resumed" {
		t.Fatalf("after the decision: %v", describe(rest))
	}
}

// A kill while a decision is open ends the run with lifecycle killed and
// nothing else of the agent's stopping.
func TestKillReportsOnlyKilled(t *testing.T) {
	for _, grace := range []bool{true, false} {
		h := start(t, newMock(), nil)
		events := h.Events("")
		h.Must(200, "POST", "/spawn", brief("REQUEST_APPROVAL then report"), nil)
		first := events.Until("decision/tool_approval", wait)
		d := first[len(first)-1]
		var kill shim.KillResponse
		h.Must(200, "POST", "/kill", map[string]any{"grace": grace}, &kill)
		h.Must(200, "POST", "/spawn", brief("hello"), nil)
		rest := events.Until("completion", wait)
		i := slices.IndexFunc(rest, func(e shimclient.Envelope) bool { return e.RunID != d.RunID })
		if i != 1 || rest[0].Str("action") != "killed" || rest[1].Str("action") != "started" || kill.CleanShutdown != grace {
			t.Fatalf("grace %v: %+v, after the decision: %v", grace, kill, describe(rest))
		}
		h.Stop()
	}
}

// describe is each event's type and what tells it apart.
func describe(evs []shimclient.Envelope) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		d := e.Type()
		for _, k := range []string{"action", "phase", "outcome", "message"} {
			if v := e.Str(k); v != "" {
				d += " " + v
			}
		}
		out = append(out, d)
	}
	return out
}
