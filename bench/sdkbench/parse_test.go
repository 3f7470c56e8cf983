package main

// Per-line costs of the SDK's read path on the fake CLI's 100-byte assistant
// line, to locate where claude.Query's time goes (see docs/benchmarks.md):
//
//	go test -run '^$' -bench . -benchmem ./bench/sdkbench
//	GOEXPERIMENT=jsonv2 go test -run '^$' -bench . -benchmem ./bench/sdkbench

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	cc "github.com/tetherhq/tether/protocol/claudecode"
	"github.com/tetherhq/tether/protocol/ndjson"
)

// assistantLine is byte for byte what fake-cli.mjs writes for FAKE_SIZE=100.
const assistantLine = `{"type":"assistant","message":{"id":"msg_fake_0","type":"message","role":"assistant","model":"claude-fake-1","content":[{"type":"text","text":"The quick brown fox jumps over the lazy dog 0123456789. The quick brown fox jumps over the lazy dog "}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":25,"service_tier":"standard"}},"parent_tool_use_id":null,"session_id":"00000000-fake-4000-8000-000000023440","uuid":"f0000000-0000-4000-800b-000000000002"}`

// flatAssistant is the same shape as cc.AssistantMessage with the content
// blocks decoded in the same pass (no custom UnmarshalJSON).
type flatAssistant struct {
	Type    string `json:"type"`
	Message struct {
		ID      string `json:"id"`
		Role    string `json:"role"`
		Model   string `json:"model"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason *string   `json:"stop_reason"`
		Usage      *cc.Usage `json:"usage"`
	} `json:"message"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	SessionID       string  `json:"session_id"`
	UUID            string  `json:"uuid"`
}

func BenchmarkLine(b *testing.B) {
	line := []byte(assistantLine)
	b.Run("ndjson.ReadLine", func(b *testing.B) {
		const perBuf = 4096
		buf := bytes.Repeat(append(append([]byte{}, line...), '\n'), perBuf)
		b.SetBytes(int64(len(line) + 1))
		b.ReportAllocs()
		r := ndjson.NewReader(bytes.NewReader(buf), 0)
		for i := 0; b.Loop(); i++ {
			if _, err := r.ReadLine(); err == io.EOF {
				r = ndjson.NewReader(bytes.NewReader(buf), 0)
				_, _ = r.ReadLine()
			}
		}
	})
	b.Run("claudecode.Parse", func(b *testing.B) {
		b.SetBytes(int64(len(line) + 1))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cc.Parse(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(line) + 1))
		for b.Loop() {
			if !json.Valid(line) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("json.Unmarshal-one-pass", func(b *testing.B) {
		b.SetBytes(int64(len(line) + 1))
		b.ReportAllocs()
		for b.Loop() {
			var m flatAssistant
			if err := json.Unmarshal(line, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
