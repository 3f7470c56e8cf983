package metrics

import (
	"testing"

	"github.com/tetherhq/tether/agent"
)

// The exit code comes from the transport's ExitError text, which every
// process-based driver passes on in session.ended's error.
func TestExitCode(t *testing.T) {
	for msg, want := range map[string]string{
		"agent process exited with code 3; stderr: simulated crash": "3",
		"claude: agent process exited with code 137":                "137",
		"agent process was killed by signal killed":                 "signal killed",
		"agent process was killed by signal terminated; stderr: x":  "signal terminated",
		"the app-server exited":                                     "none",
	} {
		if got := exitCode(&agent.Error{Code: agent.ErrorAgentExit, Message: msg}); got != want {
			t.Errorf("exitCode(%q) = %q, want %q", msg, got, want)
		}
	}
	if got := exitCode(nil); got != "none" {
		t.Errorf("exitCode(nil) = %q", got)
	}
}

// A nil *Metrics is a valid observer that records nothing.
func TestNilRecordsNothing(t *testing.T) {
	var m *Metrics
	m.AgentStarted("mock", nil)
	m.EventLogged("mock", &agent.Event{Kind: agent.KindSessionEnded})
	m.LogCommitted(0, 1, nil)
	m.Delivery("x").EventDelivered("mock", &agent.Event{})
}
