package claudecli

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/tetherhq/tether/agent"
)

// The blocks a history keeps its items in start small, so that a short
// session holds little, and double up to historyBlock.
const (
	historyFirstBlock = 4 << 10
	historyBlock      = 256 << 10
)

// history is a session's completed items, for Messages, kept as bytes in
// pointer-free blocks. Kept as items, each would hold its agent's whole
// line alive (an item's strings are views of the line it came from, ids,
// usage and all), and the collector would walk every one of them on each
// cycle for as long as the session lasts: for a fast agent that cost more
// than mapping its output did. An item with text only (most of them) is
// kept as its strings, length-prefixed, which costs a copy; any other as
// its JSON.
type history struct {
	blocks  [][]byte // whole records only; the last one fills up
	n       int
	scratch []byte
	lost    error // the first item that could not be kept
}

// The kinds of record.
const (
	recordText = 't' // id, type, status, message id, parent id, text
	recordJSON = 'j' // the item's JSON
)

// add keeps a copy of it. An item that cannot be encoded (its raw tool
// input is not JSON) is not kept, and items then says so.
func (h *history) add(it *agent.Item) {
	rec, err := appendRecord(h.scratch[:0], it)
	if err != nil {
		if h.lost == nil {
			h.lost = fmt.Errorf("claudecli: item %s could not be kept: %w", it.ID, err)
		}
		return
	}
	h.scratch = rec
	last := len(h.blocks) - 1
	if last < 0 || cap(h.blocks[last])-len(h.blocks[last]) < len(rec) {
		size := historyFirstBlock
		if last >= 0 {
			size = min(2*cap(h.blocks[last]), historyBlock)
		}
		h.blocks = append(h.blocks, make([]byte, 0, max(size, len(rec))))
		last++
	}
	h.blocks[last] = append(h.blocks[last], rec...)
	h.n++
	if cap(h.scratch) > historyBlock {
		h.scratch = nil // a huge item's buffer is not kept for the next
	}
}

func appendRecord(b []byte, it *agent.Item) ([]byte, error) {
	if it.TextOnly() {
		b = append(b, recordText)
		for _, s := range [...]string{it.ID, string(it.Type), string(it.Status), it.MessageID, it.ParentID, it.Text} {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		return b, nil
	}
	j, err := json.Marshal(it)
	if err != nil {
		return b, err
	}
	b = binary.AppendUvarint(append(b, recordJSON), uint64(len(j)))
	return append(b, j...), nil
}

// snapshot is what h holds now: blocks only grow past the lengths it
// records, so it can be read while h goes on.
func (h *history) snapshot() history {
	return history{blocks: slices.Clone(h.blocks), n: h.n, lost: h.lost}
}

// errBadRecord is a history that does not read back: a bug, not input.
var errBadRecord = errors.New("claudecli: a kept item does not read back")

// items decodes what add kept, in order, and says whether an item was
// lost (Messages then fails, and a runner reads its own log instead).
func (h *history) items() ([]agent.Item, error) {
	if h.lost != nil {
		return nil, h.lost
	}
	out := make([]agent.Item, 0, h.n)
	for _, block := range h.blocks {
		for len(block) > 0 {
			var it agent.Item
			var ok bool
			if it, block, ok = readRecord(block); !ok {
				return out, errBadRecord
			}
			out = append(out, it)
		}
	}
	return out, nil
}

func readRecord(b []byte) (agent.Item, []byte, bool) {
	kind, b := b[0], b[1:]
	field := func() (string, bool) {
		n, size := binary.Uvarint(b)
		if size <= 0 || uint64(len(b)-size) < n {
			return "", false
		}
		s := string(b[size : size+int(n)])
		b = b[size+int(n):]
		return s, true
	}
	var it agent.Item
	switch kind {
	case recordText:
		var typ, status string
		ok := true
		for _, dst := range [...]*string{&it.ID, &typ, &status, &it.MessageID, &it.ParentID, &it.Text} {
			var good bool
			*dst, good = field()
			ok = ok && good
		}
		it.Type, it.Status = agent.ItemType(typ), agent.ItemStatus(status)
		return it, b, ok
	case recordJSON:
		j, ok := field()
		return it, b, ok && json.Unmarshal([]byte(j), &it) == nil
	}
	return it, b, false
}
