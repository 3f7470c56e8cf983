package agent

import (
	"bytes"
	"fmt"
	"time"
	"unsafe"

	segjson "github.com/segmentio/encoding/json"

	"github.com/tetherhq/tether/internal/jsonscan"
)

// DecodeLogged decodes an event its runner logged (and checked when it was
// made): no Validate, and for the events that make up most of a stream
// (those appendText writes: deltas, items with text only, native lines) a
// decoder that follows AppendJSON's own layout instead of a general one,
// for the events a replay reads back by the hundred thousand. Logged is
// set to data, which the event then keeps: its strings and Raw alias it.
func DecodeLogged(data []byte) (Event, error) {
	e, ok := decodeText(data)
	if !ok {
		e = Event{}
		if _, err := segjson.Parse(data, &e, segjson.ZeroCopy); err != nil {
			return Event{}, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
		}
	}
	e.Logged, e.RawChecked = data, len(e.Raw) > 0 // the core checked it before logging it
	return e, nil
}

// textDecoder reads the layout appendText writes, key by key in its
// order; anything else (another writer's order, a field appendText never
// writes, a time it does not parse) declines, and the general decoder
// reads the event instead.
type textDecoder struct {
	b  []byte
	i  int
	ok bool
}

// decodeText decodes an event appendText wrote, its raw line after it as
// AppendJSON puts it: the last member, up to the closing brace. ok is
// false for any other document.
func decodeText(data []byte) (Event, bool) {
	d := textDecoder{b: data, ok: true}
	var e Event
	d.lit(`{"kind":`)
	e.Kind = Kind(d.str())
	if d.opt(`,"session_id":`) {
		e.SessionID = d.str()
	}
	if d.opt(`,"turn_id":`) {
		e.TurnID = d.str()
	}
	d.lit(`,"time":`)
	e.Time = d.time()
	switch {
	case d.opt(`,"item":{"id":`):
		e.Item = d.item()
	case d.opt(`,"delta":{"item_id":`):
		e.Delta = d.delta()
	}
	if d.opt(`,"raw":`) {
		// The rest but the closing brace: AppendJSON writes the raw
		// line last, as the agent sent it (checked when it was logged).
		if !d.ok || len(d.b)-d.i < 3 || d.b[len(d.b)-1] != '}' {
			return Event{}, false
		}
		e.Raw = d.b[d.i : len(d.b)-1 : len(d.b)-1]
		return e, true
	}
	d.lit(`}`)
	return e, d.ok && d.i == len(d.b)
}

func (d *textDecoder) item() *Item {
	it := &Item{ID: d.str()}
	d.lit(`,"type":`)
	it.Type = ItemType(d.str())
	d.lit(`,"status":`)
	it.Status = ItemStatus(d.str())
	if d.opt(`,"message_id":`) {
		it.MessageID = d.str()
	}
	if d.opt(`,"parent_id":`) {
		it.ParentID = d.str()
	}
	if d.opt(`,"text":`) {
		it.Text = d.str()
	}
	d.lit(`}`)
	return it
}

func (d *textDecoder) delta() *Delta {
	dl := &Delta{ItemID: d.str()}
	d.lit(`,"field":`)
	dl.Field = Field(d.str())
	d.lit(`,"text":`)
	dl.Text = d.str()
	d.lit(`}`)
	return dl
}

// lit consumes s, which must come next.
func (d *textDecoder) lit(s string) {
	if !d.opt(s) {
		d.ok = false
	}
}

// opt consumes s if it comes next.
func (d *textDecoder) opt(s string) bool {
	if d.ok && bytes.HasPrefix(d.b[d.i:], unsafe.Slice(unsafe.StringData(s), len(s))) {
		d.i += len(s)
		return true
	}
	return false
}

// str reads a string; one without escapes aliases the document.
func (d *textDecoder) str() string {
	if !d.ok || d.i >= len(d.b) || d.b[d.i] != '"' {
		d.ok = false
		return ""
	}
	v, end, ok := jsonscan.Unquote(d.b, d.i+1)
	if !ok {
		d.ok = false
		return ""
	}
	d.i = end
	return unsafe.String(unsafe.SliceData(v), len(v))
}

// time reads a time as AppendFormat(time.RFC3339Nano) wrote it.
func (d *textDecoder) time() time.Time {
	s := d.str()
	if !d.ok {
		return time.Time{}
	}
	t, ok := parseUTC(s)
	if !ok {
		var err error
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			d.ok = false
		}
	}
	return t
}

// parseUTC reads "2006-01-02T15:04:05[.fraction]Z", the time a runner
// writes, without time.Parse's generality.
func parseUTC(s string) (time.Time, bool) {
	if len(s) < 20 || s[len(s)-1] != 'Z' || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	num := func(from, to int) (int, bool) {
		n := 0
		for _, c := range []byte(s[from:to]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[19 : len(s)-1]; frac != "" {
		if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
			return time.Time{}, false
		}
		n, ok := num(20, len(s)-1)
		if !ok {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			n *= 10
		}
		nsec = n
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day { // February 30th and the like: time.Parse's error
		return time.Time{}, false
	}
	return t, true
}
