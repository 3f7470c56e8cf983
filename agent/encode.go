package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/tetherhq/tether/internal/jsonscan"
)

// AppendJSON appends e's JSON encoding to dst: the same document as
// json.Marshal(e), byte for byte, but Raw is copied as it is. json.Marshal
// re-validates and compacts a RawMessage, and an event's raw payload is
// the agent's own line, already parsed by its driver: checking it again
// cost half of what encoding an event did. Raw must therefore be valid
// JSON (Validate checks it); it is written as the agent sent it. The
// events that make up most of a stream (deltas, and items with text only)
// are written without reflection.
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	raw := bytes.TrimSpace(e.Raw)
	e.Raw, e.Logged = nil, nil
	out, ok := e.appendText(dst)
	if !ok {
		b, err := json.Marshal(e)
		if err != nil {
			return dst, err
		}
		out = append(dst, b...)
	}
	if len(raw) == 0 {
		return out, nil
	}
	if out[len(out)-1] != '}' {
		return dst, fmt.Errorf("agent: encoding %s: not an object", e.Kind)
	}
	out = append(out[:len(out)-1], `,"raw":`...)
	out = append(out, raw...)
	return append(out, '}'), nil
}

// appendText writes e when it is a delta, an item with text only (a
// message, reasoning, the prompt), or has no payload at all (a native
// event); ok is false for any other event, which encoding/json then
// writes.
func (e *Event) appendText(dst []byte) ([]byte, bool) {
	if e.Session != nil || e.Turn != nil || e.Approval != nil || e.Resolution != nil || e.Usage != nil || e.Error != nil ||
		(e.Item != nil && e.Delta != nil) || (e.Item != nil && !e.Item.TextOnly()) {
		return dst, false
	}
	if y := e.Time.Year(); y < 0 || y > 9999 {
		return dst, false // encoding/json's error, not ours
	}
	b := append(dst, '{')
	if e.Seq != 0 {
		b = strconv.AppendInt(append(b, `"seq":`...), e.Seq, 10)
		b = append(b, ',')
	}
	b = appendString(append(b, `"kind":`...), string(e.Kind))
	if e.SessionID != "" {
		b = appendString(append(b, `,"session_id":`...), e.SessionID)
	}
	if e.TurnID != "" {
		b = appendString(append(b, `,"turn_id":`...), e.TurnID)
	}
	b = append(b, `,"time":"`...)
	b = append(e.Time.AppendFormat(b, time.RFC3339Nano), '"')
	if it := e.Item; it != nil {
		b = it.appendText(append(b, `,"item":`...))
	} else if d := e.Delta; d != nil {
		b = appendString(append(b, `,"delta":{"item_id":`...), d.ItemID)
		b = appendString(append(b, `,"field":`...), string(d.Field))
		b = appendString(append(b, `,"text":`...), d.Text)
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// appendText writes an item with text only (see TextOnly).
func (it *Item) appendText(b []byte) []byte {
	b = appendString(append(b, `{"id":`...), it.ID)
	b = appendString(append(b, `,"type":`...), string(it.Type))
	b = appendString(append(b, `,"status":`...), string(it.Status))
	if it.MessageID != "" {
		b = appendString(append(b, `,"message_id":`...), it.MessageID)
	}
	if it.ParentID != "" {
		b = appendString(append(b, `,"parent_id":`...), it.ParentID)
	}
	if it.Text != "" {
		b = appendString(append(b, `,"text":`...), it.Text)
	}
	return append(b, '}')
}

// AppendLogged appends e's JSON with its seq to dst: its Logged bytes
// numbered when it has them (the same document AppendJSON writes, without
// encoding it again), else AppendJSON's.
func (e *Event) AppendLogged(dst []byte) ([]byte, error) {
	if len(e.Logged) < 2 || e.Logged[0] != '{' || e.Seq <= 0 {
		return e.AppendJSON(dst)
	}
	dst = strconv.AppendInt(append(dst, `{"seq":`...), e.Seq, 10)
	if len(e.Logged) > 2 {
		dst = append(dst, ',')
	}
	return append(dst, e.Logged[1:]...), nil
}

// appendString writes s as json.Marshal does (HTML-safe).
func appendString(b []byte, s string) []byte { return jsonscan.AppendString(b, s, true) }
