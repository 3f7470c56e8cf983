package protov1_test

import (
	"strings"
	"testing"
	"time"
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
	for i, f := range frames {
		if f["seq"] != float64(i+2) {
			t.Fatalf("frame %d has seq %v", i, f["seq"])
		}
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
