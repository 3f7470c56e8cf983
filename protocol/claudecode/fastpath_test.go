package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/jsonscan"
)

// slowParse decodes a line the general way, as Parse does off the fast path.
func slowParse(typ string, line []byte) (Message, error) {
	m := newMessage(typ)
	if err := decode(line, m); err != nil {
		return nil, err
	}
	m.setRaw(line)
	return m, nil
}

// fastPathAgrees reports whether the fast path took the line, and what it
// got wrong if it took a line the general decoder rejects or decodes
// differently.
func fastPathAgrees(line []byte) (accepted bool, problem string) {
	typ := PeekType(line)
	fast := fastParse(typ, line)
	if fast == nil {
		return false, ""
	}
	if guess := fastParse(leadingType(line), line); guess != nil && guess.Type() != typ {
		return true, fmt.Sprintf("leading type %q decoded, the line's type is %q: %q", guess.Type(), typ, line)
	}
	slow, err := slowParse(typ, line)
	if err != nil {
		return true, fmt.Sprintf("fast path accepted %q, the general decoder says %v", line, err)
	}
	if !Checked(fast) || !json.Valid(line) || !jsonscan.Valid(line, MaxCheckedDepth) {
		return true, fmt.Sprintf("fast path accepted %q: checked %v, valid %v, nested within %d %v", line,
			Checked(fast), json.Valid(line), MaxCheckedDepth, jsonscan.Valid(line, MaxCheckedDepth))
	}
	uncheck(fast)
	if !reflect.DeepEqual(fast, slow) {
		return true, fmt.Sprintf("fast path differs on %q:\nfast %#v\nslow %#v", line, fast, slow)
	}
	return true, ""
}

// uncheck clears what only the fast path sets, for a comparison with the
// general decoder.
func uncheck(m Message) {
	switch m := m.(type) {
	case *AssistantMessage:
		m.checked = false
	case *StreamEvent:
		m.checked = false
	}
}

func checkFastPath(t *testing.T, line []byte) bool {
	t.Helper()
	accepted, problem := fastPathAgrees(line)
	if problem != "" {
		t.Fatal(problem)
	}
	return accepted
}

var fastPathSeeds = []string{
	`{"type":"assistant","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[{"type":"text","text":"hi"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":25,"service_tier":"standard","cache_creation":{"ephemeral_5m_input_tokens":0}}},"parent_tool_use_id":null,"session_id":"s","uuid":"u"}`,
	`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls -la \"x\""}}],"stop_reason":"tool_use"},"parent_tool_use_id":"p"}`,
	`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"a\nb","signature":"sig"},{"type":"redacted_thinking","data":"zz"},{"type":"image","source":{"type":"base64"}}]}}`,
	`{"type":"assistant","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"é"}],"is_error":true}]},"error":"rate_limit","aborted":true}`,
	`{"type":"assistant","message":{"content":"plain"}}`,
	`{"type":"assistant","Message":{"id":"x"}}`,
	`{"type":"assistant","message":{"usage":{"input_tokens":1.5}}}`,
	`{"type":"assistant","message":{"usage":{"input_tokens":1},"usage":{"output_tokens":2}}}`,
	`{"type":"assistant","message":{"id":"a"},"message":{"role":"b"}}`,
	` {"type":"assistant","session_id":"\u00e9\ud83d\ude00"} `,
	`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]},"uuid":"` + "\xff" + `"}`,
	`{"type":"assistant","message":{"content":[{"type":"tool_use","input":null}]}}`,
	`{"type":"assistant","extra":[1,-2.5e3,true,false,null,{"a":[]}]}`,
	`{"type":"assistant","message":{"content":[]},"usage":null}`,
	`{"type":"assistant"}x`,
	`{"type":"assistant","type":"user","message":{}}`,
	`{"type":"user","type":"assistant","message":{"content":[]}}`,
	`{"type":"assistant","type":null}`,
	`{"type":"assistant","uuid":"u","uuid":"","session_id":"s","session_id":null}`,
	`{"type":"assistant","n":01}`,
	`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m","content":[],"usage":{"input_tokens":12}}},"session_id":"s","parent_tool_use_id":null,"uuid":"u","ttft_ms":14}`,
	`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"session_id":"s"}`,
	`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}}`,
	`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}}`,
	`{"type":"stream_event","event":{"type":"content_block_delta","delta":null}}`,
	`{"type":"stream_event","event":{"index":-3,"delta":{"text":"a"},"delta":{"thinking":"b"}},"type":"assistant"}`,
}

func TestFastPathAgreesWithTheGeneralDecoder(t *testing.T) {
	accepted := 0
	for _, s := range fastPathSeeds {
		if checkFastPath(t, []byte(s)) {
			accepted++
		}
	}
	if accepted < 8 {
		t.Fatalf("the fast path took only %d of the %d seeds", accepted, len(fastPathSeeds))
	}
}

func FuzzFastPath(f *testing.F) {
	for _, s := range fastPathSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !strings.Contains(string(line), `"type"`) {
			lead := `{"type":"assistant",`
			if len(line)%2 == 1 {
				lead = `{"type":"stream_event",`
			}
			line = append([]byte(lead), bytes.TrimPrefix(line, []byte("{"))...)
		}
		checkFastPath(t, line)
	})
}

// ConversationType names the conversation lines by their start and nothing
// else; Parse has the last word on a line that only starts like one.
func TestConversationType(t *testing.T) {
	for line, want := range map[string]string{
		`{"type":"assistant","message":{}}`:                              TypeAssistant,
		`{"type":"stream_event","event":{}}`:                             TypeStreamEvent,
		`{"type":"user","message":{}}`:                                   TypeUser,
		`{"type":"system","subtype":"init"}`:                             TypeSystem,
		`{"type":"result","subtype":"success"}`:                          "",
		`{"type":"control_request","request_id":"1"}`:                    "",
		`{"type":"assistantX"}`:                                          "",
		`{"type":"\u0061ssistant"}`:                                      "",
		`{ "type":"assistant"}`:                                          "",
		`{"subtype":"init","type":"system"}`:                             "",
		`{"type":"assistant`:                                             "",
		`{"type":"assistant","type":"control_request","request_id":"1"}`: TypeAssistant,
	} {
		if got := ConversationType([]byte(line)); got != want {
			t.Errorf("ConversationType(%s) = %q, want %q", line, got, want)
		}
	}
	msg, err := Parse([]byte(`{"type":"assistant","type":"control_request","request_id":"1","request":{"subtype":"interrupt"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := msg.(*ControlRequest); !ok {
		t.Fatalf("Parse of a line with a second type = %T, want *ControlRequest", msg)
	}
}
