package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// AppendJSON appends e's JSON encoding to dst: the same document as
// json.Marshal(e), but Raw is copied as it is. json.Marshal re-validates
// and compacts a RawMessage, and an event's raw payload is the agent's own
// line, already parsed by its driver: checking it again cost half of what
// encoding an event did. Raw must therefore be valid JSON (Validate checks
// it); it is written as the agent sent it.
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	raw := bytes.TrimSpace(e.Raw)
	e.Raw = nil
	out, err := json.Marshal(e)
	if err != nil {
		return dst, err
	}
	if len(raw) == 0 {
		return append(dst, out...), nil
	}
	if out[len(out)-1] != '}' {
		return dst, fmt.Errorf("agent: encoding %s: not an object", e.Kind)
	}
	dst = append(dst, out[:len(out)-1]...)
	dst = append(dst, `,"raw":`...)
	dst = append(dst, raw...)
	return append(dst, '}'), nil
}
