package jsonscan

import (
	"encoding/binary"
	"unicode/utf8"
)

// AppendString appends s to dst as a JSON string, byte for byte as
// encoding/json writes it: quotes, backslashes and control characters
// escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped, and, with
// html, also <, > and & (json.Marshal's default; an Encoder with
// SetEscapeHTML(false) leaves them). The runs between escapes are found
// eight bytes at a time and copied whole.
func AppendString[S string | []byte](dst []byte, s S, html bool) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; ; {
		i = escapeStop(s, i, html)
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other controls, and <, > and &
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// escapeStop returns the index of the first byte at or after i that
// AppendString must look at: one it escapes, or the start of a non-ASCII
// rune; len(s) if there is none.
func escapeStop[S string | []byte](s S, i int, html bool) int {
	var angles, amps uint64 // xor masks that zero <, > and &, when html
	if html {
		angles, amps = '<'*ones, '&'*ones
	}
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64([]byte(s[i : i+8]))
		m := special(x, highs)
		if html {
			// < and > differ in one bit (0x3C, 0x3E): one zero test finds both.
			m |= zeroBytes((x^angles)&^(0x02*ones)) | zeroBytes(x^amps)
		}
		if m != 0 {
			return i + firstFlagged(m)
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf ||
			html && (c == '<' || c == '>' || c == '&') {
			return i
		}
	}
	return i
}

// zeroBytes flags the high bit of each zero byte of x; a borrow can flag a
// byte above a flagged one, never below, so the lowest flag is exact.
func zeroBytes(x uint64) uint64 { return (x - ones) &^ x & highs }

func decodeRune[S string | []byte](s S) (rune, int) {
	if b, ok := any(s).([]byte); ok {
		return utf8.DecodeRune(b)
	}
	return utf8.DecodeRuneInString(string(s))
}
