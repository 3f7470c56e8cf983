package claudecode

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
	"unsafe"

	"github.com/tetherhq/tether/internal/jsonscan"
)

// The fast path decodes the hottest line types, assistant and stream_event,
// in one validating pass over the line, with strings aliasing it. It decodes exactly what the
// general decoder (decode, segmentio) would, or declines: on anything it was
// not written for — escaped keys, keys that only match case-insensitively,
// nulls where a value is expected, fractional numbers, invalid JSON — it
// gives up and the general decoder takes the whole line, errors included.
// FuzzFastPath holds the two to the same result.

// maxFastDepth bounds nesting inside skipped values; deeper lines take the
// general decoder.
const maxFastDepth = 512

// scanner walks a line. ok turns false at the first thing it declines.
type scanner struct {
	b  []byte
	i  int
	ok bool

	// Preallocated room, taken once: for a Usage and for content blocks.
	usageSlot  *Usage
	blockSlots Content
}

func (s *scanner) fail() bool { s.ok = false; return false }

func (s *scanner) ws() {
	// Lines are compact: one compare settles the usual case.
	for s.i < len(s.b) && s.b[s.i] <= ' ' {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// object reads an object, calling field with each key (positioned at the
// value, which field must consume).
func (s *scanner) object(field func(key []byte)) {
	if !s.eat('{') {
		s.fail()
		return
	}
	if s.eat('}') {
		return
	}
	for s.ok {
		key, ok := s.key()
		if !ok || !s.eat(':') {
			s.fail()
			return
		}
		s.ws()
		field(key)
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			s.fail()
		}
		return
	}
}

// key reads an object key without its quotes; keys with escapes decline.
func (s *scanner) key() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start := s.i + 1
	if j := jsonscan.PlainASCII(s.b, start); j < len(s.b) && s.b[j] == '"' {
		s.i = j + 1
		return s.b[start:j], true
	}
	// Escapes, control characters, non-ASCII or no end: decline (a
	// non-ASCII key would not match a known one anyway).
	return nil, false
}

// other skips the value of a key the target does not have. A key that
// differs from a known one only in case would still match it in the
// general decoder, so anything but lower-case ASCII declines.
func (s *scanner) other(key []byte) {
	for _, c := range key {
		if c >= 'A' && c <= 'Z' || c >= 0x80 {
			s.fail()
			return
		}
	}
	s.skip(0)
}

// str reads a string (null leaves *dst as it is). Plain strings alias the
// line; escaped or non-ASCII ones are checked and decoded as the general
// decoder does.
func (s *scanner) str(dst *string) {
	switch s.peek() {
	case 'n':
		s.null()
		return
	case '"':
	default:
		s.fail()
		return
	}
	start := s.i
	if j := jsonscan.PlainASCII(s.b, start+1); j < len(s.b) {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			if j > start+1 {
				*dst = unsafe.String(&s.b[start+1], j-start-1)
			} else {
				*dst = ""
			}
			return
		case c == '\\' || c >= 0x80:
			s.decodeStr(start, dst)
			return
		default:
			s.fail()
			return
		}
	}
	s.fail()
}

// decodeStr hands a string needing work (escapes, UTF-8 to check) to the
// general decoder.
func (s *scanner) decodeStr(start int, dst *string) {
	s.i = start
	if !s.skipString() {
		return
	}
	raw := s.b[start:s.i]
	if !bytes.ContainsRune(raw, '\\') && utf8.Valid(raw) {
		*dst = unsafe.String(&raw[1], len(raw)-2)
		return
	}
	var v string
	if decode(raw, &v) != nil {
		s.fail()
		return
	}
	*dst = v
}

// optStr reads a nullable string into a pointer.
func (s *scanner) optStr(dst **string) {
	if s.peek() == 'n' {
		s.null()
		*dst = nil
		return
	}
	v := new(string)
	s.str(v)
	*dst = v
}

func (s *scanner) null() {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return
	}
	s.fail()
}

// int64 reads an integer; fractions, exponents and overflow decline.
func (s *scanner) int64(dst *int64) {
	if s.peek() == 'n' {
		s.null()
		return
	}
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	var v int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if s.i-start >= 18 {
			s.fail()
			return
		}
		v = v*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	n := s.i - start
	if n == 0 || (n > 1 && s.b[start] == '0') {
		s.fail()
		return
	}
	if s.i < len(s.b) {
		if c := s.b[s.i]; c == '.' || c == 'e' || c == 'E' {
			s.fail()
			return
		}
	}
	if neg {
		v = -v
	}
	*dst = v
}

func (s *scanner) bool(dst *bool) {
	rest := s.b[s.i:]
	switch {
	case bytes.HasPrefix(rest, []byte("true")):
		*dst, s.i = true, s.i+4
	case bytes.HasPrefix(rest, []byte("false")):
		*dst, s.i = false, s.i+5
	case bytes.HasPrefix(rest, []byte("null")):
		s.i += 4
	default:
		s.fail()
	}
}

// raw returns a value's bytes, validated; null declines (the general
// decoder's raw fields treat it specially).
func (s *scanner) raw(dst *json.RawMessage) {
	if s.peek() == 'n' {
		s.fail()
		return
	}
	start := s.i
	if s.skip(0) {
		*dst = s.b[start:s.i]
	}
}

// skip validates and steps over one value.
func (s *scanner) skip(depth int) bool {
	if depth > maxFastDepth {
		return s.fail()
	}
	switch c := s.peek(); {
	case c == '"':
		return s.skipString()
	case c == '{':
		s.object(func(key []byte) { s.skip(depth + 1) })
		return s.ok
	case c == '[':
		s.array(func() { s.skip(depth + 1) })
		return s.ok
	case c == '-' || c >= '0' && c <= '9':
		return s.skipNumber()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.fail()
}

func (s *scanner) literal(lit string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		s.i += len(lit)
		return true
	}
	return s.fail()
}

// array reads an array, calling elem positioned at each element.
func (s *scanner) array(elem func()) {
	if !s.eat('[') {
		s.fail()
		return
	}
	if s.eat(']') {
		return
	}
	for s.ok {
		s.ws()
		elem()
		if s.eat(',') {
			continue
		}
		if !s.eat(']') {
			s.fail()
		}
		return
	}
}

// skipString validates a string's escapes and control characters.
func (s *scanner) skipString() bool {
	for j := s.i + 1; j < len(s.b); j++ {
		if j = jsonscan.PlainASCII(s.b, j); j >= len(s.b) {
			break
		}
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return true
		case c < 0x20:
			return s.fail()
		case c == '\\':
			j++
			if j >= len(s.b) {
				return s.fail()
			}
			switch s.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s.b) || !isHex4(s.b[j+1:j+5]) {
					return s.fail()
				}
				j += 4
			default:
				return s.fail()
			}
		}
	}
	return s.fail()
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// skipNumber validates JSON number grammar.
func (s *scanner) skipNumber() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return s.fail()
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return s.fail()
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return s.fail()
		}
		i = j
	}
	s.i = i
	return true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// fastParse decodes a line of a type with a fast path, or returns nil to
// decline. typ is a guess (PeekType's, or the line's first key's): each
// fast decoder checks the type itself.
func fastParse(typ string, line []byte) Message {
	switch typ {
	case TypeAssistant:
		if m := fastAssistant(line); m != nil {
			return m
		}
	case TypeStreamEvent:
		if m := fastStreamEvent(line); m != nil {
			return m
		}
	}
	return nil
}

// leadingType returns the value of "type" when it is the line's first key,
// as it is in every line the CLI prints, for the conversation types (see
// ConversationType): a guess, to be checked, that spares a scan of the line.
func leadingType(line []byte) string {
	const lead = `{"type":"`
	if !bytes.HasPrefix(line, []byte(lead)) {
		return ""
	}
	end := bytes.IndexByte(line[len(lead):], '"')
	if end < 0 {
		return ""
	}
	switch v := line[len(lead) : len(lead)+end]; string(v) {
	case TypeAssistant:
		return TypeAssistant
	case TypeStreamEvent:
		return TypeStreamEvent
	case TypeUser:
		return TypeUser
	case TypeSystem:
		return TypeSystem
	}
	return ""
}

// ConversationType returns the type of a line that starts the way the CLI
// prints the bulk of a conversation — "type" first, with the value
// assistant, stream_event, user or system — and "" for any other line.
// A reader that must catch control, result and keep-alive lines as they
// arrive can leave such lines to Parse and run PeekType on the others
// only. The answer is a guess: a line with a second top-level "type" is
// what the last one says, which Parse finds out; the CLI prints no such
// lines, and a consumer that meets one (Parse returns a control message)
// should route it as the reader would have.
func ConversationType(line []byte) string { return leadingType(line) }

// lineType reads a top-level "type" value: a string, which the caller
// compares with the type it decodes.
func (s *scanner) lineType(dst *string) {
	if s.peek() != '"' {
		s.fail()
		return
	}
	s.str(dst)
}

// end checks that only spaces follow the top-level value and that its type
// is want.
func (s *scanner) end(typ, want string) bool {
	s.ws()
	return s.ok && s.i == len(s.b) && typ == want
}

// fastAssistant decodes an assistant line, or returns nil to decline. It
// checks the type itself: the last top-level "type" must be "assistant".
func fastAssistant(line []byte) *AssistantMessage {
	s := &scanner{b: line, ok: true}
	// One allocation for the message and what it usually points to.
	a := &struct {
		m      AssistantMessage
		usage  Usage
		blocks [1]ContentBlock
	}{}
	m := &a.m
	s.usageSlot, s.blockSlots = &a.usage, a.blocks[:0]
	typ := ""
	s.object(func(key []byte) {
		switch string(key) {
		case "type":
			s.lineType(&typ)
		case "message":
			s.apiMessage(&m.Message)
		case "parent_tool_use_id":
			s.optStr(&m.ParentToolUseID)
		case "session_id":
			s.str(&m.SessionID)
		case "uuid":
			s.str(&m.UUID)
		case "error":
			s.str(&m.Error)
		case "aborted":
			s.bool(&m.Aborted)
		default:
			s.other(key)
		}
	})
	if !s.end(typ, TypeAssistant) {
		return nil
	}
	m.raw, m.checked = line, true
	return m
}

// apiMessage reads the message object; object declines anything else.
func (s *scanner) apiMessage(m *APIMessage) {
	s.object(func(key []byte) {
		switch string(key) {
		case "id":
			s.str(&m.ID)
		case "role":
			s.str(&m.Role)
		case "model":
			s.str(&m.Model)
		case "content":
			s.content(&m.Content)
		case "stop_reason":
			s.optStr(&m.StopReason)
		case "usage":
			s.usage(&m.Usage)
		default:
			s.other(key)
		}
	})
}

func (s *scanner) usage(dst **Usage) {
	switch s.peek() {
	case 'n':
		s.null()
		*dst = nil
		return
	case '{':
	default:
		s.fail()
		return
	}
	if *dst == nil {
		if *dst = s.usageSlot; *dst == nil {
			*dst = new(Usage)
		}
		s.usageSlot = nil
		**dst = Usage{}
	}
	u := *dst
	s.object(func(key []byte) {
		switch string(key) {
		case "input_tokens":
			s.int64(&u.InputTokens)
		case "output_tokens":
			s.int64(&u.OutputTokens)
		case "cache_creation_input_tokens":
			s.int64(&u.CacheCreationInputTokens)
		case "cache_read_input_tokens":
			s.int64(&u.CacheReadInputTokens)
		case "service_tier":
			s.str(&u.ServiceTier)
		default:
			s.other(key)
		}
	})
}

// content reads a content array; strings and nulls decline (array fails on
// them).
func (s *scanner) content(dst *Content) {
	out := s.blockSlots
	if out == nil {
		out = make(Content, 0, 1)
	}
	s.blockSlots = nil
	s.array(func() {
		if b := s.block(); s.ok {
			out = append(out, b)
		}
	})
	*dst = out
}

func (s *scanner) block() ContentBlock {
	start := s.i // array has skipped the spaces before the block
	var a anyBlock
	s.object(func(key []byte) {
		switch string(key) {
		case "type":
			s.str(&a.Type)
		case "text":
			s.str(&a.Text)
		case "thinking":
			s.str(&a.Thinking)
		case "signature":
			s.str(&a.Signature)
		case "data":
			s.str(&a.Data)
		case "id":
			s.str(&a.ID)
		case "name":
			s.str(&a.Name)
		case "input":
			s.raw(&a.Input)
		case "tool_use_id":
			s.str(&a.ToolUseID)
		case "content":
			s.raw(&a.Content)
		case "is_error":
			s.bool(&a.IsError)
		default:
			s.other(key)
		}
	})
	if b := modelledBlock(&a); b != nil {
		return b
	}
	return UnknownBlock{Type: a.Type, Raw: json.RawMessage(s.b[start:s.i])}
}

// fastStreamEvent decodes a stream_event line, or returns nil to decline.
func fastStreamEvent(line []byte) *StreamEvent {
	s := &scanner{b: line, ok: true}
	m := &StreamEvent{}
	typ := ""
	s.object(func(key []byte) {
		switch string(key) {
		case "type":
			s.lineType(&typ)
		case "event":
			s.streamEvent(&m.Event)
		case "parent_tool_use_id":
			s.optStr(&m.ParentToolUseID)
		case "session_id":
			s.str(&m.SessionID)
		case "uuid":
			s.str(&m.UUID)
		default:
			s.other(key)
		}
	})
	if !s.end(typ, TypeStreamEvent) {
		return nil
	}
	m.raw, m.checked = line, true
	return m
}

func (s *scanner) streamEvent(e *APIStreamEvent) {
	s.object(func(key []byte) {
		switch string(key) {
		case "type":
			s.str(&e.Type)
		case "index":
			var v int64
			s.int64(&v)
			e.Index = int(v)
		case "delta":
			s.delta(&e.Delta)
		case "content_block":
			s.raw(&e.ContentBlock)
		case "message":
			s.raw(&e.Message)
		case "usage":
			s.usage(&e.Usage)
		default:
			s.other(key)
		}
	})
}

func (s *scanner) delta(dst **StreamDelta) {
	if s.peek() != '{' {
		s.fail() // null included: the general decoder's pointer rules apply
		return
	}
	if *dst == nil {
		*dst = new(StreamDelta)
	}
	d := *dst
	s.object(func(key []byte) {
		switch string(key) {
		case "type":
			s.str(&d.Type)
		case "text":
			s.str(&d.Text)
		case "partial_json":
			s.str(&d.PartialJSON)
		case "thinking":
			s.str(&d.Thinking)
		case "stop_reason":
			s.optStr(&d.StopReason)
		default:
			s.other(key)
		}
	})
}
