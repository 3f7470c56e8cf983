package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
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
	e.Raw = nil
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

// appendText writes e when it is a delta or an item with text only (a
// message, reasoning, the prompt) and nothing else; ok is false for any
// other event, which encoding/json then writes.
func (e *Event) appendText(dst []byte) ([]byte, bool) {
	if e.Session != nil || e.Turn != nil || e.Approval != nil || e.Resolution != nil || e.Usage != nil || e.Error != nil ||
		(e.Item == nil) == (e.Delta == nil) || (e.Item != nil && !e.Item.textOnly()) {
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
		b = appendString(append(b, `,"item":{"id":`...), it.ID)
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
		b = append(b, '}')
	} else {
		d := e.Delta
		b = appendString(append(b, `,"delta":{"item_id":`...), d.ItemID)
		b = appendString(append(b, `,"field":`...), string(d.Field))
		b = appendString(append(b, `,"text":`...), d.Text)
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// htmlSafe says encoding/json writes the ASCII byte c as it is: letters
// (above '>') but the backslash first, as most bytes of text are.
func htmlSafe(c byte) bool {
	if c > '>' {
		return c != '\\'
	}
	return c >= 0x20 && c != '"' && c != '<' && c != '>' && c != '&'
}

// textOnly says the item has no typed fields.
func (it *Item) textOnly() bool {
	return it.Tool == nil && it.Command == nil && it.Changes == nil && it.Plan == nil && it.Question == nil
}

// appendString writes s as encoding/json does: HTML-safe, invalid UTF-8
// as U+FFFD, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe(c) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
