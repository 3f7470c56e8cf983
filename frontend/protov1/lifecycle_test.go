package protov1_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"

	"github.com/tetherhq/tether/internal/mockclaude"
)

// The seed's lifecycle: connect → init → ready → query → messages → done → stop.
func TestSeedLifecycle(t *testing.T) {
	tr := startRunner(t, "text", time.Minute)
	c := tr.dial()
	c.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "agent_abc123", "session_opts": map[string]any{"model": "sonnet"}})
	ready := c.next()
	if ready["type"] != "ready" || ready["session_id"] == "" || ready["seq"] != float64(1) {
		t.Fatalf("ready = %v", ready)
	}
	c.send(map[string]any{"type": "query", "request_id": "q1", "prompt": "hello", "opts": map[string]any{}})
	frames := c.until("done")
	var sawResult bool
	prev := seqOf(ready)
	for i, f := range frames {
		// Seqs rise; events that make no frame (the turn's start, the
		// prompt) leave gaps.
		if seqOf(f) <= prev {
			t.Fatalf("frame %d has seq %v after %d", i, f["seq"], prev)
		}
		prev = seqOf(f)
		if f["type"] == "message" {
			if f["request_id"] != "q1" {
				t.Fatalf("message for %v", f["request_id"])
			}
			if p, _ := f["payload"].(string); strings.Contains(p, `"type":"result"`) {
				sawResult = true
			}
		}
	}
	done := frames[len(frames)-1]
	if !sawResult || done["request_id"] != "q1" || done["reason"] != "completed" {
		t.Fatalf("done = %v, saw result %v", done, sawResult)
	}
	c.send(map[string]any{"type": "stop"})
	if _, _, err := c.ws.Read(t.Context()); err == nil {
		t.Fatal("connection stayed open after stop")
	}
}

// A query sent while another one's turn runs is refused with
// turn_in_progress under its own request id; the running turn keeps its
// request id to its done frame, and the next query after that runs.
func TestQueryWhileATurnRuns(t *testing.T) {
	// 50 chunks 20 ms apart: q2 arrives a second before q1's turn ends.
	tr := startRunnerWith(t, runnerOpts{scenario: "slow", grace: time.Minute,
		env: map[string]string{mockclaude.EnvDelayMS: "20"}})
	c := tr.dial()
	c.open("agent_busy", nil)
	c.query("q1", "count")
	for f := c.next(); f["type"] != "message" || f["request_id"] != "q1"; f = c.next() {
		if f["type"] == "done" || f["type"] == "error" {
			t.Fatalf("before q1's output: %v", f)
		}
	}
	c.query("q2", "too soon")
	var refused bool
	for _, f := range c.until("done") {
		switch {
		case f["type"] == "error":
			if f["request_id"] != "q2" || f["code"] != "turn_in_progress" || !strings.Contains(str(f, "details"), `"q1"`) {
				t.Fatalf("error frame %v, want turn_in_progress for q2 naming q1", f)
			}
			refused = true
		case f["request_id"] != "q1":
			t.Fatalf("frame of the running turn labelled %v: %v", f["request_id"], f)
		}
	}
	if !refused {
		t.Fatal("q2 was not refused")
	}
	c.query("q3", "now")
	frames := c.until("done")
	if done := frames[len(frames)-1]; done["request_id"] != "q3" || done["reason"] != "completed" {
		t.Fatalf("after q1's done, q3 ended with %v", done)
	}
	for _, f := range frames {
		if f["type"] == "error" {
			t.Fatalf("q3: %v", f)
		}
	}
}

// unreadableCore is a core whose events cannot be read once the session
// has started (its log failed, say).
type unreadableCore struct{ sessions.Core }

func (c unreadableCore) EventGroups(ctx context.Context, id string, after uint64, max int) iter.Seq2[[]agent.Event, error] {
	return func(yield func([]agent.Event, error) bool) {
		yield(nil, errors.New("the log cannot be read"))
	}
}

// A host whose events cannot be sent is told so and let go: an error
// frame, then the connection closes; it does not wait for frames that
// never come.
func TestHostIsLetGoWhenItsEventsCannotBeSent(t *testing.T) {
	tr := startRunnerWith(t, runnerOpts{scenario: "text", grace: time.Minute,
		wrap: func(c sessions.Core) sessions.Core { return unreadableCore{c} }})
	c := tr.dial()
	c.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "w1"})
	frames, status := c.expectClosed()
	if status != websocket.StatusInternalError {
		t.Fatalf("closed with %v, want %v", status, websocket.StatusInternalError)
	}
	if len(frames) != 1 || frames[0]["type"] != "error" || frames[0]["code"] != "internal_error" {
		t.Fatalf("frames before the close: %v", frames)
	}
}
