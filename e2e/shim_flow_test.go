package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
	"github.com/tetherhq/tether/internal/testing/shimclient"
)

// The backend's whole flow against the real `tether shim` binary and the
// real CLI: spawn, a tool_approval decision, the decision checkpoint, a
// pause while the decision is open, resume, resolve, reject, modify and a
// kill while a decision is open. The client holds every event to the
// backend's contract, and a run that ended sends nothing more. A pause
// and a kill stop the agent where it stands: the run's next event is the
// lifecycle one, with no completion and no error, the call asked about
// never runs, and the model is asked nothing more by that run (every
// model request after it carries the next run's prompt).
func TestRealCLIClaudeShimFlow(t *testing.T)   { shimFlow(t, "claude") }
func TestRealCLICodexShimFlow(t *testing.T)    { shimFlow(t, "codex") }
func TestRealCLIOpenCodeShimFlow(t *testing.T) { shimFlow(t, "opencode") }

const flowWait = 2 * time.Minute

// flowRig is a shim rig with the flow's helpers.
type flowRig struct {
	*shimRig
	t    *testing.T
	kind string
}

// shell is the prompt that makes the fake model run command in the
// agent's shell tool.
func (r *flowRig) shell(command string) string {
	if r.kind == "claude" {
		return bashPrompt(command)
	}
	return "USE_SHELL " + command
}

// exists says whether the workspace has file name.
func (r *flowRig) exists(name string) bool {
	_, err := os.Stat(filepath.Join(r.workspace, name))
	return err == nil
}

// decide spawns a run whose model runs command and returns the decision
// it asks, checked to name the command.
func (r *flowRig) decide(command string) (shim.AgentHandle, shimclient.Envelope) {
	r.t.Helper()
	var handle shim.AgentHandle
	r.c.Must(200, "POST", "/spawn", shimBrief(r.shell(command)), &handle)
	return handle, r.decision(command)
}

// decision reads the run's events up to its tool_approval decision, which
// must name command and come before the command ran.
func (r *flowRig) decision(command string) shimclient.Envelope {
	r.t.Helper()
	seen := r.events.Until("decision/tool_approval", flowWait)
	d := seen[len(seen)-1]
	if !strings.Contains(string(mustJSON(d.Event["toolArgs"])), command) {
		r.t.Fatalf("decision %s, want one about %q", mustJSON(d.Event), command)
	}
	return d
}

// resolve answers decision d and returns the run's events up to its
// completion, which must be a success.
func (r *flowRig) resolve(d shimclient.Envelope, resolution map[string]any) []shimclient.Envelope {
	r.t.Helper()
	var reply map[string]string
	r.c.Must(200, "POST", "/resolve", map[string]any{"decisionId": d.Str("decisionId"), "resolution": resolution}, &reply)
	if reply["status"] != "resolved" {
		r.t.Fatalf("resolve: %v", reply)
	}
	rest := r.events.Until("completion", flowWait)
	if c := rest[len(rest)-1]; c.Str("outcome") != "success" || c.RunID != d.RunID {
		r.t.Fatalf("after the resolution: %s", mustJSON(rest))
	}
	return rest
}

// ran reports whether evs hold an approved, completed call whose input
// names command.
func ran(evs []shimclient.Envelope, command string) bool {
	return slices.ContainsFunc(evs, func(e shimclient.Envelope) bool {
		return e.Type() == "tool_call" && e.Str("phase") == "completed" && e.Event["approved"] == true &&
			strings.Contains(string(mustJSON(e.Event["input"])), command)
	})
}

// stopped checks that the run of decision d ended with lifecycle action
// and nothing else, and that its agent asked the model nothing after the
// decision (asked is the count of model requests then).
func (r *flowRig) stopped(d shimclient.Envelope, action string, asked int) {
	r.t.Helper()
	if n := len(r.requests()); n != asked {
		r.t.Errorf("%s: the agent asked the model %d more times after the decision: %s", action, n-asked, bodies(r.requests()[asked:]))
	}
	if e := r.events.Next(flowWait); e.Type() != "lifecycle" || e.Str("action") != action || e.RunID != d.RunID {
		r.t.Fatalf("after the decision, %s, want lifecycle %s", mustJSON(e), action)
	}
}

// onlyFrom checks that every model request from the asked'th on carries
// marker, the prompt of the run after a stop: none came from the run
// that was stopped.
func (r *flowRig) onlyFrom(asked int, marker string) []string {
	r.t.Helper()
	var bodies []string
	for _, q := range r.requests()[asked:] {
		if !strings.Contains(string(q.Body), marker) {
			r.t.Errorf("a model request after the stop is not the next run's (no %q): %.2000s", marker, q.Body)
		}
		bodies = append(bodies, string(q.Body))
	}
	return bodies
}

func shimFlow(t *testing.T, kind string) {
	timed(t)
	r := &flowRig{shimRig: startShimRig(t, kind), t: t, kind: kind}

	// Spawn, a decision, its checkpoint.
	handle, d1 := r.decide("touch allowed.txt")
	var cp shim.SerializedAgentState
	r.c.Must(200, "POST", "/checkpoint", map[string]any{"decisionId": d1.Str("decisionId")}, &cp)
	if cp.SerializedBy != "decision_checkpoint" || cp.Checkpoint.SessionID == "" || !slices.Contains(cp.PendingDecisionIDs, d1.Str("decisionId")) {
		t.Fatalf("checkpoint %+v", cp)
	}

	// Pause while the decision is open: paused, nothing else.
	asked := len(r.requests())
	var paused shim.SerializedAgentState
	r.c.Must(200, "POST", "/pause", handle, &paused)
	r.stopped(d1, "paused", asked)
	if paused.SerializedBy != "pause" || paused.SessionID != cp.Checkpoint.SessionID || !slices.Contains(paused.PendingDecisionIDs, d1.Str("decisionId")) {
		t.Errorf("pause state %+v", paused)
	}
	if r.exists("allowed.txt") {
		t.Fatal("the paused call ran")
	}

	// Resume: the same conversation, a new assignment, its decision
	// approved: the call runs.
	cp.BriefSnapshot = mustJSON(shimBrief(r.shell("touch resumed.txt")))
	var resumed shim.AgentHandle
	r.c.Must(200, "POST", "/resume", cp, &resumed)
	d2 := r.decision("touch resumed.txt")
	if d2.RunID == d1.RunID {
		t.Fatalf("the resumed run is the paused one (%s)", d2.RunID)
	}
	bodies := r.onlyFrom(asked, "resumed.txt")
	if !slices.ContainsFunc(bodies, func(b string) bool { return strings.Contains(b, "allowed.txt") }) {
		t.Error("the resumed conversation does not carry the paused run's")
	}
	rest := r.resolve(d2, map[string]any{"type": "tool_approval", "action": "approve", "actionKind": "update"})
	if !ran(rest, "touch resumed.txt") || !r.exists("resumed.txt") {
		t.Fatalf("the approved call did not run: %s", mustJSON(rest))
	}

	// Reject: the call does not run, the model is told why.
	_, d3 := r.decide("touch rejected.txt")
	rest = r.resolve(d3, map[string]any{"type": "tool_approval", "action": "reject", "rationale": "not in this workspace"})
	if ran(rest, "touch rejected.txt") || r.exists("rejected.txt") {
		t.Fatalf("the rejected call ran: %s", mustJSON(rest))
	}

	// Modify: the call runs with the modified arguments where the agent
	// takes them (Claude Code), and its tool_call says so; elsewhere it
	// does not run as asked, and OpenCode's model is told the arguments to
	// make it again with (Codex's decline carries no reason).
	_, d4 := r.decide("touch asked.txt")
	before := len(r.requests())
	rest = r.resolve(d4, map[string]any{"type": "tool_approval", "action": "modify", "modifiedArgs": map[string]any{"command": "touch modified.txt"}})
	if r.exists("asked.txt") || ran(rest, "touch asked.txt") {
		t.Fatalf("the modified call ran as first asked (asked.txt %v, modified.txt %v): %s", r.exists("asked.txt"), r.exists("modified.txt"), mustJSON(rest))
	}
	told := slices.ContainsFunc(r.requests()[before:], func(q fakehttp.Request) bool { return strings.Contains(string(q.Body), "touch modified.txt") })
	switch kind {
	case "claude":
		if !r.exists("modified.txt") || !ran(rest, "touch modified.txt") {
			t.Fatalf("the call did not run with the modified arguments: %s", mustJSON(rest))
		}
	case "opencode":
		if r.exists("modified.txt") || !told {
			t.Errorf("modified.txt %v; the model was told the modified arguments: %v", r.exists("modified.txt"), told)
		}
	}

	// Kill while a decision is open: killed, nothing else; a new spawn
	// after it is the next run.
	_, d5 := r.decide("touch killed.txt")
	asked = len(r.requests())
	var kill shim.KillResponse
	r.c.Must(200, "POST", "/kill", map[string]any{"grace": true}, &kill)
	r.stopped(d5, "killed", asked)
	if !kill.CleanShutdown || r.exists("killed.txt") {
		t.Fatalf("kill %+v, the call ran: %v", kill, r.exists("killed.txt"))
	}
	r.c.Must(200, "POST", "/spawn", shimBrief("SAY after the kill"), nil)
	last := r.events.Until("completion", flowWait)
	if last[0].Str("action") != "started" || !strings.Contains(last[len(last)-1].Str("summary"), "after the kill") {
		t.Fatalf("spawn after the kill: %s", mustJSON(last))
	}
	r.onlyFrom(asked, "after the kill")
	r.child.Stop(t)
	r.events.Close()
}

// bodies are the requests' bodies, each cut short, to read in a failure.
func bodies(reqs []fakehttp.Request) string {
	var b strings.Builder
	for _, q := range reqs {
		fmt.Fprintf(&b, "\n%s %.1500s", q.Path, q.Body)
	}
	return b.String()
}
