package claudecode

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
	"unsafe"
)

// The decoders below alias the line being parsed instead of copying out of
// it. A message owns its line (Raw) and nobody modifies it, so strings and
// raw values may point into it: a 50 MB line then costs 50 MB, not a copy
// per decoding layer. encoding/json hands UnmarshalJSON a sub-slice of the
// input, which is what makes this work.

// rawView is a json.RawMessage that aliases the input.
type rawView []byte

func (r *rawView) UnmarshalJSON(data []byte) error {
	*r = data
	return nil
}

// stringView decodes a JSON string, aliasing the input when the string has
// no escapes and falling back to a normal decode when it has.
type stringView string

func (s *stringView) UnmarshalJSON(data []byte) error {
	if len(data) >= 2 && data[0] == '"' && data[len(data)-1] == '"' &&
		bytes.IndexByte(data, '\\') < 0 && plainText(data[1:len(data)-1]) {
		body := data[1 : len(data)-1]
		if len(body) == 0 {
			*s = ""
			return nil
		}
		*s = stringView(unsafe.String(&body[0], len(body)))
		return nil
	}
	if string(data) == "null" {
		*s = ""
		return nil
	}
	var v string
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*s = stringView(v)
	return nil
}

// plainText reports whether b needs no decoding: no control characters and
// valid UTF-8 (encoding/json would replace invalid bytes).
func plainText(b []byte) bool {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < 0x20 {
			return false
		}
		if c >= 0x80 {
			return validUTF8(b[i:])
		}
	}
	return true
}

func validUTF8(b []byte) bool { return utf8.Valid(b) }
