package protov1

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
)

// A relay host gets a line embedded as is only when every decoder takes the
// frame (encoding/json refuses nesting deeper than 10000, which leaves a
// line 9997 levels in a batch frame); anything else goes as the seed
// protocol's payload string. Either way the frame is one JSON value.
func TestProjectLine(t *testing.T) {
	nested := func(depth int) string {
		return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
	}
	cases := []struct {
		line  string
		relay bool
		raw   bool
	}{
		{`{"type":"assistant","message":{"content":[]}}`, true, true},
		{`{"type":"assistant","message":{"content":[]}}`, false, false},
		{`{"type":"assistant",}`, true, false},
		{`{"a":1}}`, true, false},
		{`["not an object"]`, true, false},
		{"{\"text\":\"a\x01b\"}", true, false},
		{nested(9997), true, true},
		{nested(9998), true, false},
	}
	for _, c := range cases {
		p := newProjector(c.relay, func(string, uint64) string { return "" })
		p.requests["t1"] = "q1"
		frame, ok := p.frame(nil, &agent.Event{Kind: agent.KindNative, TurnID: "t1", Raw: json.RawMessage(c.line)})
		if c.line[0] != '{' {
			if ok {
				t.Errorf("line %.40q made a frame: %s", c.line, frame)
			}
			continue
		}
		var f struct {
			Type      string          `json:"type"`
			RequestID string          `json:"request_id"`
			Payload   *string         `json:"payload"`
			Line      json.RawMessage `json:"line"`
		}
		if err := json.Unmarshal(frame, &f); err != nil {
			t.Fatalf("line %.40q: frame is not JSON: %v", c.line, err)
		}
		if f.Type != "message" || f.RequestID != "q1" {
			t.Errorf("line %.40q: frame %.80s", c.line, frame)
		}
		switch {
		case c.raw && string(f.Line) != c.line:
			t.Errorf("line %.40q: not embedded as is: %.80s", c.line, frame)
		case !c.raw && (f.Payload == nil || *f.Payload != c.line || f.Line != nil):
			t.Errorf("line %.40q: not a payload string: %.80s", c.line, frame)
		}
	}
}
