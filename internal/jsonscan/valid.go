package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

// Valid reports whether data is one JSON value nested at most maxDepth
// deep, with exactly the answer of encoding/json.Valid for a maxDepth of
// 10000 (its own limit), but several times faster on the strings that
// make up most of an agent's output: it scans them eight bytes at a time.
// Like encoding/json it does not check UTF-8.
func Valid(data []byte, maxDepth int) bool {
	// One bit per open container, 1 for an object; the first 64 levels
	// need no allocation. inObject is the innermost one's bit.
	var small [1]uint64
	stack := small[:]
	depth, inObject := 0, false
	i := skipSpace(data, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return false
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if depth == maxDepth {
				return false
			}
			if depth/64 == len(stack) {
				stack = append(stack, 0)
			}
			word, bit := depth/64, uint(depth%64)
			inObject = c == '{'
			close := byte(']')
			if inObject {
				stack[word] |= 1 << bit
				close = '}'
			} else {
				stack[word] &^= 1 << bit
			}
			depth++
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == close {
				depth--
				i++
				inObject = innermostIsObject(stack, depth)
				break
			}
			if inObject {
				if i = objectKey(data, i); i < 0 {
					return false
				}
			}
			continue // the first value
		case c == '"':
			if i = skipString(data, i+1); i < 0 {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if i = skipNumber(data, i); i < 0 {
				return false
			}
		case c == 't':
			if i = skipLiteral(data, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = skipLiteral(data, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = skipLiteral(data, i, "null"); i < 0 {
				return false
			}
		default:
			return false
		}
		// A value ended before i: close containers, or go to the next value.
		for {
			i = skipSpace(data, i)
			if depth == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			c := data[i]
			if c == ',' {
				i = skipSpace(data, i+1)
				if inObject {
					if i = objectKey(data, i); i < 0 {
						return false
					}
				}
				break
			}
			if inObject && c == '}' || !inObject && c == ']' {
				depth--
				i++
				inObject = innermostIsObject(stack, depth)
				continue
			}
			return false
		}
	}
}

// innermostIsObject reports whether the innermost of depth open
// containers is an object.
func innermostIsObject(stack []uint64, depth int) bool {
	return depth > 0 && stack[(depth-1)/64]&(1<<uint((depth-1)%64)) != 0
}

// objectKey reads `"key" :` and the space after it from i, returning where
// the value starts (-1: invalid).
func objectKey(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = skipString(data, i+1); i < 0 {
		return -1
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipSpace(data, i+1)
}

func skipSpace(data []byte, i int) int {
	// Agents write compact JSON: one test is the usual whole cost.
	for i < len(data) && data[i] <= ' ' {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the closing quote of a string whose
// body starts at i (-1: invalid). The plain bytes are scanned eight at a
// time, inline: most strings of an agent's line are short keys and
// values, where a call per string would cost as much as the scan.
func skipString(data []byte, i int) int {
	for {
		for i+8 <= len(data) {
			if m := Stops(binary.LittleEndian.Uint64(data[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				goto stop
			}
			i += 8
		}
		if i = Plain(data, i); i >= len(data) { // the last few bytes
			return -1
		}
	stop:
		switch data[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(data) {
				return -1
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) {
					return -1
				}
				for _, h := range data[i+2 : i+6] {
					if !isHex(h) {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipNumber returns the index after a number starting at i (-1: invalid):
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(data []byte, i int) int {
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return -1
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := skipDigits(data, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

func skipLiteral(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}
