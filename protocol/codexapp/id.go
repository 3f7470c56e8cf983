package codexapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// ID is a JSON-RPC request id: a JSON number (the schema says a 64-bit
// integer) or a string. It holds the id's exact JSON text, so an answer
// echoes the id byte for byte, and two IDs are equal (==, map keys) when
// their texts are. The zero ID means "no id"; it encodes as null.
type ID struct{ text string }

// IntID is the id n.
func IntID(n int64) ID { return ID{text: strconv.FormatInt(n, 10)} }

// StringID is the id s.
func StringID(s string) ID {
	b, _ := marshal(s) // a Go string always marshals; no HTML escaping
	return ID{text: string(b)}
}

// IsZero reports whether id is absent (or was null).
func (id ID) IsZero() bool { return id.text == "" }

// IsString reports whether id is a JSON string.
func (id ID) IsString() bool { return id.text != "" && id.text[0] == '"' }

// Int returns the id as an integer, if it is one.
func (id ID) Int() (int64, bool) {
	if id.text == "" || id.IsString() {
		return 0, false
	}
	n, err := strconv.ParseInt(id.text, 10, 64)
	return n, err == nil
}

// Str returns the id's string value, if it is a string.
func (id ID) Str() (string, bool) {
	if !id.IsString() {
		return "", false
	}
	var s string
	if err := json.Unmarshal([]byte(id.text), &s); err != nil {
		return "", false
	}
	return s, true
}

// String is the id's JSON text ("7", `"abc"`), or "null" for the zero ID.
func (id ID) String() string {
	if id.text == "" {
		return "null"
	}
	return id.text
}

// MarshalJSON writes the id's exact text, or null for the zero ID.
func (id ID) MarshalJSON() ([]byte, error) { return []byte(id.String()), nil }

// errBadID is the cause of a DecodeError for an id that is neither a number
// nor a string.
var errBadID = errors.New("id is neither a number nor a string")

// UnmarshalJSON keeps a number's or a string's exact text; null gives the
// zero ID. Anything else is an error.
func (id *ID) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case string(data) == "null":
		*id = ID{}
		return nil
	case len(data) == 0 || !json.Valid(data):
		return errBadID
	case data[0] == '"', data[0] == '-', data[0] >= '0' && data[0] <= '9':
		*id = ID{text: string(data)} // copied: an id outlives its line in a pending map
		return nil
	}
	return errBadID
}
