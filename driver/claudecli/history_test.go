package claudecli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/agent"
)

// The items of real sessions come back from a history as they went in:
// text, tool calls with their raw input, file changes, declined calls.
func TestHistoryKeepsRealSessionsItems(t *testing.T) {
	names, _ := filepath.Glob(filepath.Join("testdata", "transcripts", "b-*.jsonl"))
	if len(names) == 0 {
		t.Fatal("no transcripts")
	}
	for _, name := range names {
		var h history
		var want []agent.Item
		for _, e := range replay(t, filepath.Base(name)) {
			if e.Kind == agent.KindItemCompleted {
				h.add(e.Item)
				want = append(want, *e.Item)
			}
		}
		got, err := h.items()
		if err != nil || len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: %d items back of %d: %v", name, len(got), len(want), err)
		}
		for i := range want {
			if a, b := marshal(t, got[i]), marshal(t, want[i]); a != b {
				t.Fatalf("%s: item %d\n got %s\nwant %s", name, i, a, b)
			}
		}
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Items larger than a block, and many small ones across blocks, keep their
// order; an item that cannot be encoded makes items fail instead of
// leaving a silent gap.
func TestHistoryBlocksAndLoss(t *testing.T) {
	var h history
	big := strings.Repeat("x", 3*historyBlock)
	for i := range 5000 {
		text := "item"
		if i%1000 == 500 {
			text = big
		}
		h.add(&agent.Item{ID: string(rune('a' + i%26)), Type: agent.ItemMessage, Status: agent.ItemDone, Text: text})
	}
	got, err := h.items()
	if err != nil || len(got) != 5000 || got[1500].Text != big || got[1501].Text != "item" || got[25].ID != "z" {
		t.Fatalf("%d items, %v", len(got), err)
	}
	if len(h.blocks) < 2 || cap(h.blocks[0]) != historyFirstBlock {
		t.Fatalf("%d blocks, the first of %d bytes", len(h.blocks), cap(h.blocks[0]))
	}
	for _, b := range h.blocks {
		if cap(b) > historyBlock && cap(b) != len(b) {
			t.Fatalf("a block of %d bytes holds more than its one huge item (%d bytes)", cap(b), len(b))
		}
	}
	h.add(&agent.Item{ID: "bad", Type: agent.ItemToolCall, Status: agent.ItemDone,
		Tool: &agent.ToolCall{Name: "Read", Input: json.RawMessage(`{"unterminated`)}})
	if _, err := h.items(); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("a lost item went unreported: %v", err)
	}
}

// A snapshot is read while the history goes on growing (the race detector
// watches).
func TestHistorySnapshotWhileAdding(t *testing.T) {
	var (
		mu sync.Mutex
		h  history
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20000 {
			mu.Lock()
			h.add(&agent.Item{ID: "i", Type: agent.ItemMessage, Status: agent.ItemDone, Text: "some text of an item"})
			mu.Unlock()
		}
	}()
	for last := 0; ; {
		mu.Lock()
		snap := h.snapshot()
		mu.Unlock()
		items, err := snap.items()
		if err != nil || len(items) < last {
			t.Fatalf("%d items after %d: %v", len(items), last, err)
		}
		last = len(items)
		if last == 20000 {
			break
		}
	}
	<-done
}
