package claudecli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tetherhq/tether/agent"
)

// historyChunk is the size of the blocks a history keeps its items in.
const historyChunk = 256 << 10

// history is a session's completed items, for Messages, kept as their
// JSON lines in blocks without pointers. Kept as items, each would hold
// the agent's whole line alive (an item's strings are views of the line
// it came from, ids, usage and all), and the collector would walk every
// one of them on each cycle for as long as the session lasts: for a fast
// agent that cost more than the mapping did. As bytes the items take
// about a third of the memory and the collector never looks inside.
type history struct {
	blocks  [][]byte // whole lines only; the last one fills up
	n       int
	scratch []byte
	lost    error // the first item that could not be kept
}

// add keeps a copy of it. An item that cannot be encoded (its raw tool
// input is not JSON) is not kept, and items then says so.
func (h *history) add(it *agent.Item) {
	line, err := it.AppendJSON(h.scratch[:0])
	if err != nil {
		if h.lost == nil {
			h.lost = fmt.Errorf("claudecli: item %s could not be kept: %w", it.ID, err)
		}
		return
	}
	// JSON has no raw newline, so the lines split where they were joined.
	line = append(line, '\n')
	h.scratch = line
	last := len(h.blocks) - 1
	if last < 0 || cap(h.blocks[last])-len(h.blocks[last]) < len(line) {
		h.blocks = append(h.blocks, make([]byte, 0, max(historyChunk, len(line))))
		last++
	}
	h.blocks[last] = append(h.blocks[last], line...)
	h.n++
	if cap(h.scratch) > historyChunk {
		h.scratch = nil // a huge item's buffer is not kept for the next
	}
}

// snapshot is what h holds now: blocks only grow past the lengths it
// records, so it can be read while h goes on.
func (h *history) snapshot() history {
	return history{blocks: slices.Clone(h.blocks), n: h.n, lost: h.lost}
}

// items decodes what add kept, in order, and says whether an item was
// lost (Messages then fails, and a runner reads its own log instead).
func (h *history) items() ([]agent.Item, error) {
	if h.lost != nil {
		return nil, h.lost
	}
	out := make([]agent.Item, 0, h.n)
	for _, block := range h.blocks {
		for line := range bytes.Lines(block) {
			var it agent.Item
			if err := json.Unmarshal(line, &it); err != nil {
				return out, fmt.Errorf("claudecli: a kept item: %w", err)
			}
			out = append(out, it)
		}
	}
	return out, nil
}
