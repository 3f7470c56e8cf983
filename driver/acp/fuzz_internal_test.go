package acp

import (
	"encoding/json"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
)

// Any session/update the agent sends, in any order, maps to valid events
// and never panics; the turn's end completes every item it started.
func FuzzMapUpdate(f *testing.F) {
	f.Add([]byte(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`),
		[]byte(`{"sessionUpdate":"tool_call","toolCallId":"c","title":"ls","kind":"execute","status":"pending"}`))
	f.Add([]byte(`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","content":[{"type":"diff","path":"/w/a","newText":"x"}]}`),
		[]byte(`{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"pending"}]}`))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		m := newMapper("x", time.Now, true)
		m.startTurn("r")
		var events []agent.Event
		for _, raw := range [][]byte{first, second} {
			var u acpsdk.SessionUpdate
			if json.Unmarshal(raw, &u) != nil {
				continue
			}
			events = append(events, m.update(u)...)
		}
		events = append(events, m.endTurn(agent.TurnCompleted, nil, nil, 0)...)
		open := map[string]bool{}
		for _, e := range events {
			if err := e.Validate(); err != nil {
				t.Fatalf("%v: %+v", err, e)
			}
			switch e.Kind {
			case agent.KindItemStarted:
				open[e.Item.ID] = true
			case agent.KindItemCompleted:
				delete(open, e.Item.ID)
			}
		}
		if len(open) != 0 {
			t.Fatalf("items never completed: %v", open)
		}
	})
}
