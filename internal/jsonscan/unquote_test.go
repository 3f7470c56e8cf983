package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// Unquote decodes what encoding/json decodes, and refuses what it
// refuses, for any string a JSON writer could have made (valid UTF-8).
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u2028\ud83d\ude00"`, `"\ud800"`, `"\ud800\ud800x"`,
		`"\udc00\ud83d"`, `"bad\x"`, `"\u12"`, "\"ctl\x01\"", `"unterminated`, `"tail\`, `"<&>"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || data[0] != '"' || !utf8.Valid(data) {
			return
		}
		value, end, ok := Unquote(data, 1)
		var want string
		err := json.Unmarshal(data, &want)
		if ok && len(bytes.TrimLeft(data[end:], " \t\r\n")) == 0 {
			if err != nil {
				t.Fatalf("Unquote(%q) = %q, encoding/json refuses it: %v", data, value, err)
			}
			if string(value) != want {
				t.Fatalf("Unquote(%q) = %q, want %q", data, value, want)
			}
			return
		}
		if ok && err == nil {
			t.Fatalf("Unquote(%q) ended at %d of %d, but the whole is one string", data, end, len(data))
		}
		if !ok && err == nil {
			t.Fatalf("Unquote(%q) refused what encoding/json reads as %q", data, want)
		}
	})
}

// A string without escapes is b's own bytes, capped at its length.
func TestUnquoteAliasesPlainStrings(t *testing.T) {
	b := []byte(`"hello" tail`)
	value, end, ok := Unquote(b, 1)
	if !ok || string(value) != "hello" || end != 7 || &value[0] != &b[1] || cap(value) != 5 {
		t.Fatalf("%q %d %v cap %d", value, end, ok, cap(value))
	}
}
