package claudecode_test

import (
	"strings"
	"testing"

	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// BenchmarkParseAssistant is the hot path: one 100-byte assistant message
// as the CLI prints it.
func BenchmarkParseAssistant(b *testing.B) {
	line := `{"type":"assistant","message":{"id":"msg_fake_1","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"text","text":"` +
		strings.Repeat("The quick brown fox ", 5) + `"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":25,"service_tier":"standard"}},"parent_tool_use_id":null,"session_id":"00000000-fake-4000-8000-000000000001","uuid":"f0000000-0000-4000-800b-000000000001"}`
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		buf := []byte(line)
		if _, err := cc.Parse(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPeekType is the relay's and the reader's classification of a line.
func BenchmarkPeekType(b *testing.B) {
	line := []byte(`{"type":"assistant","message":{"id":"msg_fake_1","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"text","text":"` +
		strings.Repeat("The quick brown fox ", 5) + `"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":25,"service_tier":"standard"}},"parent_tool_use_id":null,"session_id":"00000000-fake-4000-8000-000000000001","uuid":"f0000000-0000-4000-800b-000000000001"}`)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if cc.PeekType(line) != cc.TypeAssistant {
			b.Fatal("wrong type")
		}
	}
}

// BenchmarkParseStreamEvent is the hot path with partial messages on: one
// text delta.
func BenchmarkParseStreamEvent(b *testing.B) {
	line := `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` +
		strings.Repeat("tick ", 4) + `"}},"session_id":"2e033f0c-e871-4d4d-9805-2572cc865f89","parent_tool_use_id":null,"uuid":"38027277-d46c-44a2-a8d5-ec2b87041343"}`
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		buf := []byte(line)
		if _, err := cc.Parse(buf); err != nil {
			b.Fatal(err)
		}
	}
}
