package shim_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/frontend/shim"
)

// FuzzResumePosition: /resume takes the script position a client sends
// (checkpoint.scriptPosition, or runStateJson's turns) and the next
// checkpoint counts on from it. A position the shim cannot count on from
// (negative, or past MaxScriptPosition) is refused with 400; one it takes
// comes back one turn on, never wrapped around (2^63−1 came back as
// −2^63).
func FuzzResumePosition(f *testing.F) {
	for _, pos := range []int64{0, 1, 7, -1, math.MaxInt32, shim.MaxScriptPosition, shim.MaxScriptPosition + 1,
		math.MaxInt64, math.MaxInt64 - 1, math.MinInt64} {
		f.Add(pos, false)
		f.Add(pos, true)
	}
	f.Fuzz(func(t *testing.T, pos int64, inRunState bool) {
		h := start(t, newMock(), nil)
		events := h.Events("")
		h.Must(200, "POST", "/spawn", brief("one"), nil)
		events.Until("completion", wait)
		var cp shim.SerializedAgentState
		h.Must(200, "POST", "/checkpoint", map[string]any{}, &cp)
		body := map[string]any{}
		raw, _ := json.Marshal(cp)
		_ = json.Unmarshal(raw, &body)
		checkpoint := body["checkpoint"].(map[string]any)
		if inRunState {
			delete(checkpoint, "scriptPosition")
			runState, _ := json.Marshal(map[string]any{"sessionId": cp.SessionID, "turns": pos})
			checkpoint["runStateJson"] = string(runState)
		} else {
			checkpoint["scriptPosition"] = pos
		}
		var reply map[string]any
		status := h.Call("POST", "/resume", body, &reply)
		if pos < 0 || pos > shim.MaxScriptPosition {
			if status != http.StatusBadRequest || !strings.Contains(reply["detail"].(string), "out of range") {
				t.Fatalf("position %d: %d %v, want 400", pos, status, reply)
			}
			return
		}
		if status != http.StatusOK {
			t.Fatalf("position %d: %d %v", pos, status, reply)
		}
		events.Until("completion", wait)
		var next shim.SerializedAgentState
		h.Must(200, "POST", "/checkpoint", map[string]any{}, &next)
		got := next.Checkpoint.ScriptPosition
		if got == nil || int64(*got) <= pos || int64(*got)-pos != 1 {
			t.Fatalf("resumed from position %d, the next checkpoint says %v", pos, got)
		}
	})
}

// FuzzEventsCursor: WS /events?runId=R&after=N resumes after event N of
// run R. N not a sequence (negative, not a number, past int64) or past
// the run's last event is refused with 400 before the upgrade; N at the
// run's last event waits for its next one; any other N starts right
// after it.
func FuzzEventsCursor(f *testing.F) {
	for _, after := range []string{"0", "1", "5", "-1", "", "x", "1e3", "0x10", "+2",
		strconv.FormatInt(math.MaxInt64, 10), strconv.FormatInt(math.MinInt64, 10),
		"9223372036854775808", "18446744073709551615", "18446744073709551616"} {
		f.Add(after)
	}
	f.Fuzz(func(t *testing.T, after string) {
		h := start(t, newMock(), nil)
		events := h.Events("")
		h.Must(200, "POST", "/spawn", brief("one"), nil)
		run := events.Until("completion", wait)
		runID, last := run[0].RunID, run[len(run)-1].SourceSequence

		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		u := "ws" + strings.TrimPrefix(h.Base, "http") + "/events?runId=" + url.QueryEscape(runID) + "&after=" + url.QueryEscape(after)
		ws, resp, err := websocket.Dial(ctx, u, nil)
		n, parseErr := strconv.ParseInt(after, 10, 64)
		if after == "" { // no after: from the run's first event
			n, parseErr = 0, nil
		}
		if parseErr != nil || n < 0 || n > last {
			if err == nil {
				ws.CloseNow()
				t.Fatalf("after=%q (run's last %d): the stream opened", after, last)
			}
			if resp == nil || resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("after=%q (run's last %d): %v, want 400", after, last, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("after=%q: %v", after, err)
		}
		defer ws.CloseNow()
		if n == last { // nothing yet: the run's next event is the first
			var accepted map[string]string
			h.Must(200, "POST", "/inject-context", map[string]any{"content": "more", "priority": "required"}, &accepted)
			if accepted["delivery"] != "new_turn" {
				t.Fatalf("the update was %v, not a turn of the run", accepted)
			}
		}
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("after=%q: %v", after, err)
		}
		var env shim.Envelope
		if err := json.Unmarshal(data, &env); err != nil || env.RunID != runID || env.SourceSequence != n+1 {
			t.Fatalf("after=%q: the first event is %s (%v)", after, data, err)
		}
	})
}
