package shim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/tetherhq/tether/frontend/shim"
)

// A kill's graceTimeoutMs is milliseconds the shim turns into a timeout:
// a negative one, or one past MaxGraceTimeout (2^62 ms wrapped around to a
// timeout already past), is refused with 400 and the agent goes on; 0 is
// the default grace.
func TestKillGraceOutOfRange(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("REQUEST_APPROVAL"), nil)
	events.Until("decision/tool_approval", wait)
	for _, ms := range []int64{-1, shim.MaxGraceTimeout.Milliseconds() + 1, 1 << 62, math.MaxInt64} {
		var reply map[string]string
		if got := h.Call("POST", "/kill", map[string]any{"grace": true, "graceTimeoutMs": ms}, &reply); got != 400 ||
			!strings.Contains(reply["detail"], "graceTimeoutMs") {
			t.Errorf("graceTimeoutMs %d: %d %v", ms, got, reply)
		}
	}
	var health shim.Health
	h.Must(200, "GET", "/health", nil, &health)
	if health.AgentStatus != shim.StatusWaiting {
		t.Fatalf("a refused kill stopped the agent: %s", health.AgentStatus)
	}
	var kill shim.KillResponse
	h.Must(200, "POST", "/kill", map[string]any{"grace": true, "graceTimeoutMs": 0}, &kill)
	if !kill.CleanShutdown {
		t.Errorf("kill with the default grace: %+v", kill)
	}
}
