package shim_test

import (
	"fmt"
	"testing"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/shimclient"
)

// 10,000 events of one run reach each of two clients, all of them, in
// order (the reference's buffer drops past 1,000 and splits the stream).
func TestTenThousandEventsReachTwoClients(t *testing.T) {
	const n = 10_000
	h := start(t, &shimclient.FloodDriver{N: n}, nil)
	one, two := h.Events(""), h.Events("")
	h.Must(200, "POST", "/spawn", brief("flood"), nil)
	for _, s := range []*shimclient.Stream{one, two} {
		seen := s.Until("completion", wait)
		msgs := 0
		for _, e := range seen {
			if e.Type() != "status" || e.Str("message") == "Turn 1 started" {
				continue
			}
			if want := fmt.Sprintf("message %d", msgs); e.Str("message") != want {
				t.Fatalf("event %d: %q, want %q", e.SourceSequence, e.Str("message"), want)
			}
			msgs++
		}
		if msgs != n {
			t.Errorf("%d of %d messages", msgs, n)
		}
	}
}

// An agent that dies mid-run: an error, then lifecycle crashed, and the
// handle's status is error.
func TestAgentCrash(t *testing.T) {
	h := start(t, &shimclient.FloodDriver{N: 1}, nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("CRASH"), nil)
	seen := events.Until("lifecycle", wait)
	seen = append(seen, events.Until("lifecycle", wait)...)
	last, before := seen[len(seen)-1], seen[len(seen)-2]
	if last.Str("action") != "crashed" || before.Type() != "error" || before.Str("severity") != "critical" {
		t.Fatalf("crash events %v", types(seen))
	}
	var health shim.Health
	h.Must(200, "GET", "/health", nil, &health)
	if health.AgentStatus != "error" {
		t.Errorf("after a crash: %s", health.AgentStatus)
	}
	h.Must(200, "POST", "/spawn", brief("after the crash"), nil) // a crashed run does not block the next
	events.Until("completion", wait)
}

// A failed turn (the mock's FAIL_TURN): the model error as a recoverable
// warning while the agent retries, then the failure and an abandoned
// completion.
func TestFailedTurn(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("FAIL_TURN"), nil)
	seen := events.Until("completion", wait)
	var errs []shimclient.Envelope
	for _, e := range seen {
		if e.Type() == "error" {
			errs = append(errs, e)
		}
	}
	if len(errs) != 2 || errs[0].Event["recoverable"] != true || errs[1].Event["recoverable"] != false || errs[1].Str("category") != "provider" {
		t.Errorf("errors %v", errs)
	}
	if c := seen[len(seen)-1]; c.Str("outcome") != "abandoned" {
		t.Errorf("completion %+v", c.Event)
	}
	var health shim.Health
	h.Must(200, "GET", "/health", nil, &health)
	if health.AgentStatus != "error" {
		t.Errorf("after a failed turn: %s", health.AgentStatus)
	}
}
