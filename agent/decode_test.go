package agent_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tetherhq/tether/agent"
)

// sameEvent compares two decoded events, their times as instants (a
// decoder may give an offset's zone another *Location).
func sameEvent(t *testing.T, what string, got, want agent.Event) {
	t.Helper()
	if !got.Time.Equal(want.Time) {
		t.Fatalf("%s: time %v, want %v", what, got.Time, want.Time)
	}
	if got.RawChecked != (len(got.Raw) > 0) {
		t.Fatalf("%s: RawChecked %v with %d bytes of raw: every logged raw was checked", what, got.RawChecked, len(got.Raw))
	}
	got.Time, want.Time, got.Logged, want.Logged, got.RawChecked = time.Time{}, time.Time{}, nil, nil, false
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// What AppendJSON writes, DecodeLogged reads back as encoding/json does,
// whatever the strings hold and whatever the time: the events the
// layout-following decoder takes, and the ones it leaves to the general
// decoder.
func FuzzDecodeLogged(f *testing.F) {
	f.Add(0, "s1", "t1", "hello <b>&</b> \"q\" \\ \n\t\x01 \u2028 é \U0001F600", "m1", `{"type":"assistant"}`, int64(1764046800123456789), 0)
	f.Add(1, "", "", "\xff\xfe bad utf-8", "", ``, int64(0), 90)
	f.Add(2, "s", "t", "delta", "m", `{"a":[1,{"b":"}"}]}`, int64(1764046800000000000), -300)
	f.Add(3, "s", "", "", "", `{"k":"v"}`, int64(-62135596800000000), 0)
	f.Add(4, "s", "t", "tool", "m", `{"k":1}`, int64(1764046800000000001), 0)
	f.Fuzz(func(t *testing.T, shape int, session, turn, text, id, raw string, nanos int64, offsetMinutes int) {
		if raw != "" && !json.Valid([]byte(raw)) {
			return
		}
		zone := time.UTC
		if offsetMinutes%(24*60) != 0 {
			zone = time.FixedZone("", offsetMinutes%(24*60)*60)
		}
		e := agent.Event{SessionID: session, TurnID: turn, Time: time.Unix(0, nanos).In(zone), Raw: json.RawMessage(raw)}
		switch uint(shape) % 5 {
		case 0:
			e.Kind, e.Item = agent.KindItemCompleted, &agent.Item{ID: id, Type: agent.ItemMessage, Status: agent.ItemDone, MessageID: id, ParentID: turn, Text: text}
		case 1:
			e.Kind, e.Delta = agent.KindItemDelta, &agent.Delta{ItemID: id, Field: agent.FieldText, Text: text}
		case 2:
			e.Kind = agent.KindNative
		case 3:
			e.Kind, e.Item = agent.KindItemStarted, &agent.Item{ID: id, Type: agent.ItemReasoning, Status: agent.ItemInProgress}
		case 4: // not one appendText writes
			e.Kind, e.Item = agent.KindItemStarted, &agent.Item{ID: id, Type: agent.ItemToolCall, Status: agent.ItemInProgress,
				Tool: &agent.ToolCall{Name: text, Input: json.RawMessage(`{"x":1}`)}}
		}
		data, err := e.AppendJSON(nil)
		if err != nil {
			return // a year encoding/json refuses
		}
		var want agent.Event
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("encoding/json cannot read %s: %v", data, err)
		}
		got, err := agent.DecodeLogged(data)
		if err != nil {
			t.Fatalf("DecodeLogged(%s): %v", data, err)
		}
		if string(got.Logged) != string(data) {
			t.Fatal("Logged is not the document")
		}
		sameEvent(t, string(data), got, want)
	})
}

// Whatever bytes a damaged log holds, DecodeLogged returns an event or an
// ErrInvalidEvent, never a panic; what it reads from a valid document is
// what encoding/json reads.
func FuzzDecodeLoggedBytes(f *testing.F) {
	f.Add([]byte(`{"kind":"item.delta","session_id":"s","time":"2026-11-25T05:00:00.5Z","delta":{"item_id":"i","field":"text","text":"x"},"raw":{"a":1}}`))
	f.Add([]byte(`{"kind":"native","time":"2026-02-30T05:00:00Z","raw":{}}`))
	f.Add([]byte(`{"kind":"native","time":"2026-11-25T05:00:00+01:00"}`))
	f.Add([]byte(`{"kind":"native","time":"2026-11-25T05:00:00Z","raw":}`))
	f.Add([]byte(`{"kind":"item.completed","time":"2026-11-25T05:00:00.123456789Z","item":{"id":"i","type":"message","status":"completed","text":"a\u00e9\ud800"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := agent.DecodeLogged(data)
		if err != nil {
			return
		}
		if !json.Valid(data) || !utf8.Valid(data) {
			return // damaged: DecodeLogged trusts the log's raw lines, and its writer's UTF-8
		}
		var want agent.Event
		if err := json.Unmarshal(data, &want); err != nil {
			return
		}
		sameEvent(t, string(data), got, want)
	})
}

// A real-CLI assistant line's item.completed, decoded as a replay does,
// by the layout-following decoder and by the general one.
func BenchmarkDecodeLogged(b *testing.B) {
	line := `{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hello! I can help you with that. Let me look at the files in the workspace first,\nthen we will see."}],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"0b8d3e2a-7f4c-4a8e-9a55-3c1d2b6f0e11","uuid":"5a1e2f3c-1111-4b2a-9c3d-0e1f2a3b4c5d"}`
	e := agent.Event{Kind: agent.KindItemCompleted, SessionID: "0b8d3e2a-7f4c-4a8e-9a55-3c1d2b6f0e11", TurnID: "0b8d3e2a-7f4c-4a8e-9a55-3c1d2b6f0e11/t1",
		Time: time.Now().UTC(), Raw: json.RawMessage(line),
		Item: &agent.Item{ID: "msg_01/0", Type: agent.ItemMessage, Status: agent.ItemDone, MessageID: "msg_01",
			Text: "Hello! I can help you with that. Let me look at the files in the workspace first,\nthen we will see."}}
	data, _ := e.AppendJSON(nil)
	b.Run("layout", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := agent.DecodeLogged(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		spaced := append([]byte(`{ `), data[1:]...) // declined by the layout decoder
		b.SetBytes(int64(len(spaced)))
		for b.Loop() {
			if _, err := agent.DecodeLogged(spaced); err != nil {
				b.Fatal(err)
			}
		}
	})
}
