package runnerv1_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	v1 "github.com/tetherhq/tether/protocol/runnerv1"
)

// storedFrames are frames as the runner logs them: encoded, without seq.
func storedFrames(t *testing.T) [][]byte {
	t.Helper()
	done, err := v1.Encode(v1.Done{RequestID: "q1", Reason: "completed"})
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{
		v1.AppendMessageRaw(nil, 0, "q1", []byte(`{"type":"assistant","text":"a\"b,\\n"}`)),
		v1.AppendMessageLine(nil, 0, "q1", "not json\tat all"),
		done,
	}
}

func TestBatchLayout(t *testing.T) {
	got := string(v1.AppendBatch(nil, 7, storedFrames(t)[:1]))
	want := `{"seq":7,"n":1,"type":"batch","frames":[` + "\n" +
		`{"type":"message","request_id":"q1","line":{"type":"assistant","text":"a\"b,\\n"}}` + "\n]}"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Fatal("a batch is not one JSON object")
	}
}

// A batch decodes into its frames, numbered from its seq, whichever path
// reads it.
func TestBatchDecode(t *testing.T) {
	stored := storedFrames(t)
	data := v1.AppendBatch(nil, 41, stored)

	f, err := v1.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	b := f.(v1.Batch)
	if b.Seq != 41 || len(b.Frames) != 3 || v1.FrameSeq(b) != 41 {
		t.Fatalf("batch %+v", b)
	}
	m0, m1, d := b.Frames[0].(v1.Message), b.Frames[1].(v1.Message), b.Frames[2].(v1.Done)
	if m0.Seq != 41 || string(m0.Line) != `{"type":"assistant","text":"a\"b,\\n"}` || m0.RequestID != "q1" {
		t.Fatalf("frame 0 %+v", m0)
	}
	if m1.Seq != 42 || m1.Payload != "not json\tat all" || d.Seq != 43 || d.Reason != "completed" {
		t.Fatalf("frames 1, 2: %+v %+v", m1, d)
	}

	seq, items, ok := v1.SplitBatch(data, nil)
	if !ok || seq != 41 || len(items) != 3 {
		t.Fatalf("fast path: %v %d %d", ok, seq, len(items))
	}
	id, line, ok := v1.DecodeRawLine(items[0])
	if !ok || id != "q1" || string(line) != string(m0.Line) {
		t.Fatalf("raw line: %v %q %s", ok, id, line)
	}
	if _, _, ok := v1.DecodeRawLine(items[1]); ok {
		t.Fatal("a payload message took the raw-line path")
	}
	for i, item := range items {
		got, err := v1.DecodeBatchItem(item, seq+uint64(i))
		if err != nil || !reflect.DeepEqual(got, b.Frames[i]) {
			t.Fatalf("item %d: %+v, %v; want %+v", i, got, err, b.Frames[i])
		}
	}

	again, err := v1.Encode(b)
	if err != nil || string(again) != string(data) {
		t.Fatalf("re-encoded:\n%s\n%v\nwant\n%s", again, err, data)
	}
}

func TestBadBatches(t *testing.T) {
	msg := `{"type":"message","request_id":"q","payload":"x"}`
	cases := map[string]string{
		"no seq":        `{"n":1,"type":"batch","frames":[` + msg + `]}`,
		"no frames":     `{"seq":1,"n":0,"type":"batch","frames":[]}`,
		"count differs": `{"seq":1,"n":2,"type":"batch","frames":[` + msg + `]}`,
		"seq overflows": `{"seq":18446744073709551615,"n":2,"type":"batch","frames":[` + msg + `,` + msg + `]}`,
		"nested":        `{"seq":1,"n":1,"type":"batch","frames":[{"seq":1,"n":1,"type":"batch","frames":[` + msg + `]}]}`,
		"host frame":    `{"seq":1,"n":1,"type":"batch","frames":[{"type":"stop"}]}`,
		"inner seq":     `{"seq":1,"n":1,"type":"batch","frames":[{"seq":9,"type":"message","request_id":"q","payload":"x"}]}`,
		"bad inner":     `{"seq":1,"n":1,"type":"batch","frames":[{"type":"bogus"}]}`,
		"not objects":   `{"seq":1,"n":1,"type":"batch","frames":[1]}`,
	}
	for name, in := range cases {
		_, err := v1.Decode([]byte(in))
		if !errors.Is(err, v1.ErrBadFrame) {
			t.Errorf("%s: Decode(%s) err = %v", name, in, err)
		}
		if _, _, ok := v1.SplitBatch([]byte(in), nil); ok {
			t.Errorf("%s: fast path accepted %s", name, in)
		}
	}
	for _, b := range []v1.Batch{{}, {Seq: 1}, {Seq: 1, Frames: []v1.Frame{v1.Stop{}}}, {Seq: 1, Frames: []v1.Frame{v1.Batch{}}}} {
		if _, err := v1.Encode(b); !errors.Is(err, v1.ErrBadFrame) {
			t.Errorf("Encode(%+v) err = %v", b, err)
		}
	}
}

// Layouts other than AppendBatch's, valid JSON or not, are left to Decode.
func TestSplitBatchOnlyTakesItsLayout(t *testing.T) {
	msg := `{"type":"message","request_id":"q","payload":"x"}`
	for _, in := range []string{
		`{"seq":1,"n":2,"type":"batch","frames":[` + msg + `,` + msg + `]}`,
		`{"seq":1,"n":2,"type":"batch","frames":[` + "\n" + msg + "\n," + msg + `]}`,
		`{"seq":1,"n":1,"type":"batch","frames":[` + "\n" + `{"type":"done","x":1` + "\n" + `,"y":2}` + "\n]}",
		`{"seq":01,"n":1,"type":"batch","frames":[` + "\n" + msg + "\n]}",
		`{"seq":1,"n":1,"type":"batch","frames":[` + "\n\n]}",
		`{"n":1,"seq":1,"type":"batch","frames":[` + "\n" + msg + "\n]}",
	} {
		if _, _, ok := v1.SplitBatch([]byte(in), nil); ok {
			t.Errorf("fast path accepted %q", in)
		}
	}
}

// What AppendBatch writes, both paths read alike.
func FuzzBatchFastPathAgreesWithDecode(f *testing.F) {
	f.Add([]byte(`{"type":"x"}`), "payload\n,line", "q", uint64(1), uint8(3))
	f.Add([]byte("{\"a\":[{}\n,{}]}"), "", "", uint64(1<<63), uint8(1))
	f.Fuzz(func(t *testing.T, line []byte, payload, id string, seq uint64, n uint8) {
		if seq == 0 || n == 0 || seq+uint64(n) < seq {
			return
		}
		var stored [][]byte
		for i := range int(n) {
			if i%2 == 0 && json.Valid(line) && len(line) > 0 && line[0] == '{' {
				stored = append(stored, v1.AppendMessageRaw(nil, 0, id, line))
			} else {
				stored = append(stored, v1.AppendMessageLine(nil, 0, id, payload))
			}
		}
		data := v1.AppendBatch(nil, seq, stored)
		f, err := v1.Decode(data)
		if err != nil {
			t.Fatalf("Decode(%s): %v", data, err)
		}
		b := f.(v1.Batch)
		s, items, ok := v1.SplitBatch(data, nil)
		if !ok {
			// Only a line with a raw newline before a comma may make the
			// fast path step aside.
			return
		}
		if s != b.Seq || len(items) != len(b.Frames) {
			t.Fatalf("fast %d/%d frames, Decode %d/%d", s, len(items), b.Seq, len(b.Frames))
		}
		for i, item := range items {
			want := b.Frames[i].(v1.Message)
			if rid, l, ok := v1.DecodeRawLine(item); ok && (rid != want.RequestID || string(l) != string(want.Line)) {
				t.Fatalf("item %d: fast %q %s, Decode %+v", i, rid, l, want)
			}
			got, err := v1.DecodeBatchItem(item, s+uint64(i))
			if err != nil || !reflect.DeepEqual(got, b.Frames[i]) {
				t.Fatalf("item %d: %+v, %v; want %+v", i, got, err, want)
			}
		}
	})
}
