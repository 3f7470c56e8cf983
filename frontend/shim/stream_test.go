package shim_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/shimclient"
)

func ids(evs []shimclient.Envelope) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.SourceEventID)
	}
	return out
}

// Two clients both get the whole stream, the same events in the same
// order (the reference's single buffer splits it between them); a client
// that reconnects with the last event it saw gets exactly the rest; one
// asking for everything gets every run; a resume from a run the shim
// never had is refused with a close, never answered with a gap.
func TestEveryClientGetsTheWholeStream(t *testing.T) {
	h := start(t, newMock(), nil)
	one, two := h.Events(""), h.Events("")
	h.Must(200, "POST", "/spawn", brief("first"), nil)
	a := one.Until("completion", wait)
	b := two.Until("completion", wait)
	if !slices.Equal(ids(a), ids(b)) || len(a) < 10 {
		t.Fatalf("clients got different streams: %d and %d events", len(a), len(b))
	}
	cut := a[4]
	late := h.Events(fmt.Sprintf("runId=%s&after=%d", cut.RunID, cut.SourceSequence))
	rest := late.Until("completion", wait)
	if !slices.Equal(ids(rest), ids(a[5:])) {
		t.Errorf("resumed after %d: %d events, want %d", cut.SourceSequence, len(rest), len(a)-5)
	}

	h.Must(200, "POST", "/spawn", brief("second"), nil)
	second := one.Until("completion", wait)
	all := h.Events("replay=all")
	got := all.Until("completion", wait)
	got = append(got, all.Until("completion", wait)...)
	if !slices.Equal(ids(got), append(ids(a), ids(second)...)) || len(runsOf(got)) != 2 {
		t.Errorf("replay=all: %d events in %d runs", len(got), len(runsOf(got)))
	}

	gone := h.Events("runId=never&after=3")
	var ce websocket.CloseError
	if err := gone.CloseErr(); !errors.As(err, &ce) || ce.Code != 4410 {
		t.Errorf("resume from an unknown run: %v", err)
	}
}

// Events emitted while no client listens are kept for the next one to
// connect, as the reference's buffer keeps them, and a client connecting
// after them does not get them twice.
func TestEventsWaitForTheFirstClient(t *testing.T) {
	h := start(t, newMock(), nil)
	h.Must(200, "POST", "/spawn", brief("nobody listens yet"), nil)
	first := h.Events("")
	seen := first.Until("completion", wait)
	if seen[0].SourceSequence != 1 || seen[0].Str("action") != "started" {
		t.Fatalf("the first client starts at %+v", seen[0])
	}
	h.Must(200, "POST", "/spawn", brief("next"), nil)
	first.Until("completion", wait)
	for deadline := time.Now().Add(wait); ; time.Sleep(5 * time.Millisecond) { // until the shim has seen the first client take it all
		var health shim.Health
		h.Must(200, "GET", "/health", nil, &health)
		if health.PendingEventBufferSize == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events still undelivered", health.PendingEventBufferSize)
		}
	}
	later := h.EventsLate("")
	h.Must(200, "POST", "/kill", map[string]any{}, nil)
	e := later.Next(wait)
	if e.Type() != "lifecycle" || e.Str("action") != "killed" {
		t.Errorf("a client connecting after delivery got %s %s first", e.Type(), e.Str("action"))
	}
}

// A client resuming at the run's last event so far waits for the run's
// next one; one resuming past it (a sequence it cannot have seen) is
// refused with 400 before the upgrade, as a negative one is.
func TestEventsResumeAtAndPastTheEnd(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("one"), nil)
	run := events.Until("completion", wait)
	last := run[len(run)-1]
	for _, after := range []int64{last.SourceSequence + 1, -1} {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		ws, resp, err := websocket.Dial(ctx, fmt.Sprintf("ws%s/events?runId=%s&after=%d", strings.TrimPrefix(h.Base, "http"), last.RunID, after), nil)
		cancel()
		if err == nil {
			ws.CloseNow()
		}
		if resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("after=%d past the run's last event %d: %v", after, last.SourceSequence, err)
		}
	}
	at := h.Events(fmt.Sprintf("runId=%s&after=%d", last.RunID, last.SourceSequence))
	h.Must(200, "POST", "/inject-context", map[string]any{"content": "one more", "priority": "required"}, nil)
	if e := at.Next(wait); e.RunID != last.RunID || e.SourceSequence != last.SourceSequence+1 {
		t.Errorf("at the end, the next event is %d of %s", e.SourceSequence, e.RunID)
	}
}
