package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
)

var errNotObject = errors.New("not a JSON object")

// peekType finds the string value of the top-level "type" key without
// decoding the line. It returns "" when there is none, or when the value
// needs unescaping. Like encoding/json, the last of duplicate keys wins. It
// does not validate the line; the full decode that follows does that.
func peekType(line []byte) (string, error) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return "", errNotObject
	}
	depth := 0
	expectKey := false
	found := ""
	for i < len(line) {
		switch c := line[i]; c {
		case '{':
			depth++
			expectKey = depth == 1
			i++
		case '[':
			depth++
			expectKey = false
			i++
		case '}', ']':
			depth--
			i++
			if depth == 0 {
				return found, nil
			}
		case ',':
			expectKey = depth == 1
			i++
		case '"':
			end := skipString(line, i)
			if end < 0 {
				return "", errors.New("unterminated string")
			}
			if expectKey && bytes.Equal(line[i:end], []byte(`"type"`)) {
				v, _ := stringValueAfterKey(line, end)
				found = v
			}
			expectKey = false
			i = end
		default:
			i++
		}
	}
	return "", errors.New("unterminated object")
}

// stringValueAfterKey reads `: "value"` following a key ending at i. Values
// with escapes are left to the full decoder (ok is false).
func stringValueAfterKey(line []byte, i int) (string, bool) {
	i = skipSpace(line, i)
	if i >= len(line) || line[i] != ':' {
		return "", false
	}
	i = skipSpace(line, i+1)
	if i >= len(line) || line[i] != '"' {
		return "", false
	}
	end := skipString(line, i)
	if end < 0 {
		return "", false
	}
	v := line[i+1 : end-1]
	for _, c := range v {
		// Escapes and non-ASCII go to the full decoder, which unescapes
		// and replaces invalid UTF-8 the way encoding/json does.
		if c == '\\' || c >= 0x80 || c < 0x20 {
			return "", false
		}
	}
	return string(v), true
}

// skipString returns the index just past the string starting at line[i]=='"',
// or -1 if it does not end. It jumps from quote to quote (bytes.IndexByte is
// vectorised): a quote ends the string unless an odd run of backslashes
// precedes it.
func skipString(line []byte, i int) int {
	for j := i + 1; j < len(line); j++ {
		k := bytes.IndexByte(line[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		backslashes := 0
		for b := j - 1; b > i && line[b] == '\\'; b-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return j + 1
		}
	}
	return -1
}

func skipSpace(line []byte, i int) int {
	for i < len(line) {
		switch line[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// PeekType returns a line's top-level "type" without decoding the rest, or
// "" when it has none or is not a JSON object. Relays use it to spot result
// lines without parsing every message.
func PeekType(line []byte) string {
	t, err := peekType(line)
	if err != nil {
		return ""
	}
	if t == "" {
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &probe) == nil {
			return probe.Type
		}
	}
	return t
}
