package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote reads the JSON string whose content starts at b[j] (just after
// its opening quote). It returns the string's value, the index just after
// its closing quote, and false if b holds no valid string there. The
// value is b's own bytes when the string has no escapes, else a new
// slice; either way it is what encoding/json decodes, a lone surrogate
// becoming U+FFFD. Bytes of 0x80 and above pass through unchecked, for
// input that a JSON writer made (which writes only valid UTF-8).
func Unquote(b []byte, j int) (value []byte, end int, ok bool) {
	k := Plain(b, j)
	if k < len(b) && b[k] == '"' {
		return b[j:k:k], k + 1, true
	}
	out := make([]byte, 0, k-j+16)
	for {
		out = append(out, b[j:k]...)
		if k >= len(b) || b[k] < 0x20 {
			return nil, 0, false
		}
		if b[k] == '"' {
			return out, k + 1, true
		}
		// A backslash.
		if k+1 >= len(b) {
			return nil, 0, false
		}
		var n int
		if out, n = unescape(out, b[k:]); n == 0 {
			return nil, 0, false
		}
		j = k + n
		k = Plain(b, j)
	}
}

// unescape appends the value of the escape at the start of s to out; n is
// how many bytes of s it took (0: not a valid escape).
func unescape(out, s []byte) ([]byte, int) {
	switch s[1] {
	case '"', '\\', '/':
		return append(out, s[1]), 2
	case 'b':
		return append(out, '\b'), 2
	case 'f':
		return append(out, '\f'), 2
	case 'n':
		return append(out, '\n'), 2
	case 'r':
		return append(out, '\r'), 2
	case 't':
		return append(out, '\t'), 2
	case 'u':
		r, ok := hex4(s[2:])
		if !ok {
			return out, 0
		}
		if utf16.IsSurrogate(r) {
			if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
				if r2, ok := hex4(s[8:]); ok {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						return utf8.AppendRune(out, dec), 12
					}
				}
			}
			r = utf8.RuneError
		}
		return utf8.AppendRune(out, r), 6
	}
	return out, 0
}

// hex4 reads four hex digits.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}
