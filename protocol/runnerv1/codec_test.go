package runnerv1_test

import (
	"encoding/json"
	"errors"
	"testing"

	v1 "github.com/tetherhq/tether/protocol/runnerv1"
)

// The frames of the seed's protocol table, as a client written from it sends
// and expects them.
func TestDecodeSeedFrames(t *testing.T) {
	cases := map[string]string{
		`{"type":"init","protocol_version":1,"workspace_id":"w","session_opts":{}}`: v1.TypeInit,
		`{"type":"ready","session_id":"s"}`:                                         v1.TypeReady,
		`{"type":"query","request_id":"r","prompt":"p","opts":{}}`:                  v1.TypeQuery,
		`{"type":"message","request_id":"r","payload":"raw"}`:                       v1.TypeMessage,
		`{"type":"done","request_id":"r","reason":"completed"}`:                     v1.TypeDone,
		`{"type":"error","request_id":"r","code":"c","details":"d"}`:                v1.TypeError,
		`{"type":"stop"}`:      v1.TypeStop,
		`{"type":"interrupt"}`: v1.TypeInterrupt,
		`{"type":"control","request_id":"c1","subtype":"set_model","params":{"model":"x"}}`: v1.TypeControl,
		`{"type":"control_response","request_id":"c1","response":{}}`:                       v1.TypeControlResponse,
		`{"type":"input","line":"{\"type\":\"control_response\"}"}`:                         v1.TypeInput,
	}
	for in, want := range cases {
		f, err := v1.Decode([]byte(in))
		if err != nil || f.FrameType() != want {
			t.Errorf("Decode(%s) = %v, %v", in, f, err)
		}
	}
	f, _ := v1.Decode([]byte(`{"type":"init","protocol_version":1,"workspace_id":"w","session_opts":{},"resume":"session-uuid","last_seq":7}`))
	if in := f.(v1.Init); in.Resume != "session-uuid" || in.LastSeq != 7 {
		t.Fatalf("init = %+v", in)
	}
}

func TestDecodeErrorsAreTyped(t *testing.T) {
	cases := map[string]string{
		`{"type":"bogus"}`: v1.CodeUnknownType,
		`not json`:         v1.CodeInvalidFrame,
		`null`:             v1.CodeInvalidFrame,
		`{"no_type":1}`:    v1.CodeInvalidFrame,
		`{"type":"init","protocol_version":99,"workspace_id":"w","session_opts":{}}`: v1.CodeUnsupportedVersion,
		`{"type":"init","protocol_version":1,"workspace_id":"w","session_opts":[1]}`: v1.CodeInvalidOptions,
		`{"type":"query","prompt":"p"}`:                                              v1.CodeInvalidFrame,
		`{"type":"query","request_id":"r","prompt":""}`:                              v1.CodeInvalidFrame,
		`{"type":"query","request_id":"r","prompt":42}`:                              v1.CodeInvalidFrame,
		`{"type":"control","request_id":"r"}`:                                        v1.CodeInvalidFrame,
		`{"type":"input","line":"a\nb"}`:                                             v1.CodeInvalidFrame,
		`{"type":"query","request_id":5,"prompt":"p"}`:                               v1.CodeInvalidFrame,
		`{"type":"init","protocol_version":"1","session_opts":{}}`:                   v1.CodeInvalidFrame,
	}
	for in, code := range cases {
		_, err := v1.Decode([]byte(in))
		var fe *v1.FrameError
		if !errors.As(err, &fe) || fe.Code != code || !errors.Is(err, v1.ErrBadFrame) {
			t.Errorf("Decode(%s) err = %v, want code %s", in, err, code)
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	frames := []v1.Frame{
		v1.Ready{Seq: 1, SessionID: "s"},
		v1.Message{Seq: 2, RequestID: "r", Payload: `{"type":"assistant","x":"é\u2028\"\\"}` + "\t\x01"},
		v1.Done{Seq: 3, RequestID: "r", Reason: "completed"},
		v1.Error{Seq: 4, RequestID: "r", Code: v1.CodeAgentExited, Details: "exit 1"},
		v1.ControlResponse{Seq: 5, RequestID: "c", Response: json.RawMessage(`{"subtype":"success"}`)},
		v1.Stop{}, v1.Interrupt{},
	}
	for _, f := range frames {
		b, err := v1.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v1.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		a, _ := json.Marshal(got)
		w, _ := json.Marshal(f)
		if string(a) != string(w) {
			t.Errorf("round trip %s:\n got %s\nwant %s", b, a, w)
		}
	}
	b, _ := v1.Encode(v1.Stop{})
	if string(b) != `{"type":"stop"}` {
		t.Fatalf("stop = %s", b)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"type":"init","protocol_version":1,"workspace_id":"w","session_opts":{}}`))
	f.Add([]byte(`{"type":"query","request_id":"r","prompt":[{"type":"text","text":"x"}]}`))
	f.Add([]byte(`{"type":"message","seq":1,"request_id":"r","payload":"x"}`))
	f.Add([]byte("{\"seq\":3,\"n\":2,\"type\":\"batch\",\"frames\":[\n{\"type\":\"message\",\"request_id\":\"r\",\"line\":{}}\n,{\"type\":\"done\",\"request_id\":\"r\",\"reason\":\"completed\"}\n]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := v1.Decode(data)
		if err != nil {
			if !errors.Is(err, v1.ErrBadFrame) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		b, err := v1.Encode(fr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v1.Decode(b); err != nil {
			t.Fatalf("re-decode of %s: %v", b, err)
		}
	})
}

func FuzzMessagePayloadMatchesEncodingJSON(f *testing.F) {
	f.Add("plain", "r")
	f.Add("quote\" back\\ nl\n tab\t ctl\x01 bad\xff sep\u2028 <html>&", "")
	f.Fuzz(func(t *testing.T, payload, id string) {
		b := v1.AppendMessage(nil, v1.Message{Seq: 9, RequestID: id, Payload: payload})
		var got struct {
			Seq       uint64 `json:"seq"`
			RequestID string `json:"request_id"`
			Payload   string `json:"payload"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("invalid JSON %s: %v", b, err)
		}
		var want string
		w, _ := json.Marshal(payload)
		_ = json.Unmarshal(w, &want)
		if got.Payload != want || got.Seq != 9 {
			t.Fatalf("payload %q, want %q", got.Payload, want)
		}
	})
}

func TestWithSeqNumbersStoredFrames(t *testing.T) {
	stored := v1.AppendMessageLine(nil, 0, "r1", []byte(`{"type":"result"}`))
	framed := v1.WithSeq(nil, stored, 42)
	f, err := v1.Decode(framed)
	if err != nil {
		t.Fatal(err)
	}
	if m := f.(v1.Message); m.Seq != 42 || m.Payload != `{"type":"result"}` || m.RequestID != "r1" {
		t.Fatalf("got %+v", m)
	}
	stop, _ := v1.Encode(v1.Stop{})
	if got := string(v1.WithSeq(nil, stop, 3)); got != `{"seq":3,"type":"stop"}` {
		t.Fatalf("got %s", got)
	}
	// A stored frame has no seq of its own, or its zero would win over
	// the one WithSeq puts first.
	resp, _ := v1.Encode(v1.ControlResponse{RequestID: "c", Response: json.RawMessage(`{}`)})
	f, err = v1.Decode(v1.WithSeq(nil, resp, 4))
	if err != nil || v1.FrameSeq(f) != 4 {
		t.Fatalf("control_response: %+v, %v (stored as %s)", f, err, resp)
	}
}

func TestRawMessageFastPath(t *testing.T) {
	line := []byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"a\"b"}]}}`)
	framed := v1.WithSeq(nil, v1.AppendMessageRaw(nil, 0, "q1", line), 7)
	seq, id, got, ok := v1.DecodeRawMessage(framed)
	if !ok || seq != 7 || id != "q1" || string(got) != string(line) {
		t.Fatalf("fast path: %v %d %q %s", ok, seq, id, got)
	}
	f, err := v1.Decode(framed)
	if err != nil {
		t.Fatal(err)
	}
	if m := f.(v1.Message); string(m.AgentLine()) != string(line) || m.Seq != 7 {
		t.Fatalf("general path: %+v", m)
	}
	for _, other := range []string{
		`{"seq":1,"type":"message","request_id":"q","payload":"x"}`,
		`{"seq":1,"type":"done","request_id":"q","reason":"completed"}`,
		`{"seq":x,"type":"message","request_id":"q","line":{}}`,
		`{"seq":1,"type":"message","request_id":"q\"","line":{}}`,
	} {
		if _, _, _, ok := v1.DecodeRawMessage([]byte(other)); ok {
			t.Errorf("fast path accepted %s", other)
		}
	}
}

func FuzzRawMessageAgreesWithDecode(f *testing.F) {
	f.Add([]byte(`{"type":"x"}`), "q", uint64(3))
	f.Fuzz(func(t *testing.T, line []byte, id string, seq uint64) {
		if !json.Valid(line) || len(line) == 0 || line[0] != '{' || seq == 0 {
			return
		}
		framed := v1.WithSeq(nil, v1.AppendMessageRaw(nil, 0, id, line), seq)
		s, rid, got, ok := v1.DecodeRawMessage(framed)
		f, err := v1.Decode(framed)
		if err != nil {
			t.Fatalf("Decode(%s): %v", framed, err)
		}
		m := f.(v1.Message)
		if ok && (s != m.Seq || rid != m.RequestID || string(got) != string(m.Line)) {
			t.Fatalf("fast %d %q %s != %+v", s, rid, got, m)
		}
	})
}
