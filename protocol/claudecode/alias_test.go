package claudecode_test

import (
	"runtime"
	"strings"
	"testing"

	cc "github.com/tetherhq/tether/protocol/claudecode"
)

func TestParseDoesNotCopyLargeText(t *testing.T) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 200_000) // ~9 MB
	line := []byte(`{"type":"assistant","message":{"id":"m","role":"assistant","model":"x","content":[{"type":"text","text":"` + text + `"}]},"session_id":"s"}`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	msg, err := cc.Parse(line)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.(*cc.AssistantMessage).Message.Content.Text(); len(got) != len(text) {
		t.Fatalf("text length %d", len(got))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(line))/10 {
		t.Fatalf("Parse allocated %d bytes for a %d-byte line; want it to alias the line", alloc, len(line))
	}
}

func TestEscapedTextIsDecoded(t *testing.T) {
	msg, err := cc.Parse([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"a\"b\\n\u00e9\n"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.(*cc.AssistantMessage).Message.Content.Text(); got != "a\"b\\né\n" {
		t.Fatalf("got %q", got)
	}
	msg, err = cc.Parse([]byte("{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff utf8\"}]}}"))
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.(*cc.AssistantMessage).Message.Content.Text(); got != "bad \uFFFD utf8" {
		t.Fatalf("invalid UTF-8 not replaced like encoding/json: %q", got)
	}
}
