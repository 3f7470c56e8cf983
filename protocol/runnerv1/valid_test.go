package runnerv1

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	`{}`, ` {} `, "{}\n", `[]`, `[ ]`, `{ }`, `""`, `0`, `-0`, `1.5e+3`, `-0.5E-3`, `true`, `false`, `null`,
	`{"a":1}`, `{"a" : [ 1 , 2 ] , "b" : { } }`, `[[[]],[{}]]`, `{"a":"\u00e9\n\t\"\\\/\b\f\r"}`,
	"{\"a\":\"\xff\xfe\"}", "{\"a\":\"\u2028\"}", "{\"a\":\"\x7f\"}", `{"type":"assistant","message":{"content":[{"type":"text","text":"` + strings.Repeat("abcdefgh", 9) + `"}]}}`,
	`"01234567\"89"`, `"0123456789abcdef\\"`, `"0123456` + "\x01" + `"`, `"01234567` + "\x1f" + `"`, `"012345678901234` + "\x80\xff" + `"`,
	// invalid
	``, ` `, `{`, `}`, `{]`, `[}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a":1 "b":2}`, `{1:2}`,
	`01`, `1.`, `.5`, `-`, `1e`, `1e+`, `+1`, `tru`, `nul`, `falsey`, `{"a":tru}`, `"abc`, `"\x"`, `"\u12"`, `"\u12g4"`,
	"\"a\tb\"", "\"a\nb\"", `{} {}`, `{}x`, "\ufeff{}", `[1 2]`, `{"a":1}}`, `{"a":[1}`, `"\`, `"0123456789\`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat("}", 70),
	strings.Repeat(`[{"a":`, 40) + `1` + strings.Repeat("}]", 40),
	strings.Repeat(`[{"a":`, 40) + `1` + strings.Repeat("]}", 40),
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%.60q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

func FuzzValidAgreesWithEncodingJSON(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", data, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	line := []byte(`{"type":"assistant","message":{"model":"claude-sonnet-4-5","id":"msg_01XyZ","type":"message","role":"assistant","content":[{"type":"text","text":"Here is the plan:\n\n1. Read \"main.go\"\n2. Fix the bug\n\n` +
		strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 10) + `"}],"stop_reason":null,"usage":{"input_tokens":4,"output_tokens":12}},"parent_tool_use_id":null,"session_id":"9a1b2c3d-0000-4000-8000-123456789abc"}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if !Valid(line) {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkValidShortStrings is a line of mostly keys and short values,
// as most of an agent's lines are (an assistant message of the real CLI).
func BenchmarkValidShortStrings(b *testing.B) {
	line := []byte(`{"type":"assistant","message":{"id":"msg_fake_1795321125233_19","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hi there from fake claude"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"context_management":null},"parent_tool_use_id":null,"session_id":"86387df6-20c5-41ce-ad58-f870ab740960","uuid":"64c6a61b-620b-4516-95bd-1b4e33b79875","timestamp":"2026-11-22T04:18:45.237Z","request_id":"req_fake_19"}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if !EmbeddableLine(line) {
			b.Fatal("invalid")
		}
	}
}

// An embeddable line keeps a batch frame around it within encoding/json's
// nesting limit; one level more is refused.
func TestEmbeddableLineDepth(t *testing.T) {
	nested := func(depth int) []byte {
		return []byte(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))
	}
	for depth := lineDepth - 1; depth <= lineDepth+1; depth++ {
		line := nested(depth)
		frame := AppendBatch(nil, 1, [][]byte{AppendMessageRaw(nil, 0, "q", line)})
		if got, want := EmbeddableLine(line), json.Valid(frame); got != want {
			t.Errorf("depth %d: EmbeddableLine = %v, the batch frame decodes: %v", depth, got, want)
		}
	}
	for _, line := range []string{`[]`, `"s"`, `{`, `{}x`, ` {}`} {
		if EmbeddableLine([]byte(line)) {
			t.Errorf("EmbeddableLine(%q) = true", line)
		}
	}
	if !EmbeddableLine([]byte(`{}`)) {
		t.Error(`EmbeddableLine("{}") = false`)
	}
}
