// Package jsonscan finds, eight bytes at a time, where the plain content
// of a JSON string ends: the hot loop of the project's hand-written JSON
// scanners (the Claude Code fast path, the runner's line check) and of its
// JSON string writer (AppendString, for events and frames).
package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

const ones, highs = 0x0101010101010101, 0x8080808080808080

// Plain returns the index of the first byte at or after j that is a quote,
// a backslash or a control character, or len(b).
func Plain(b []byte, j int) int { return run(b, j, 0) }

// PlainASCII is Plain that also stops at a byte of 0x80 or above, for
// scanners that hand non-ASCII strings to a decoder that checks UTF-8.
func PlainASCII(b []byte, j int) int { return run(b, j, 0x80) }

// Stops flags the high bit of each byte of the little-endian word x that
// is a quote, a backslash or a control character; the lowest flag is
// exact (see special). It is Plain's step, for a scanner that inlines the
// loop.
func Stops(x uint64) uint64 { return special(x, 0) }

// run scans from j; high is the bits of a byte that also stop it (0x80
// or none), so one loop serves both scans without a branch per word.
func run(b []byte, j int, high byte) int {
	wide := uint64(high) * ones
	for ; j+8 <= len(b); j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		if m := special(x, wide); m != 0 {
			return j + firstFlagged(m)
		}
	}
	for ; j < len(b); j++ {
		if c := b[j]; c < 0x20 || c == '"' || c == '\\' || c&high != 0 {
			return j
		}
	}
	return j
}

// special flags the high bit of each byte of x (little-endian) that stops
// a run. After an xor with 0x02 a quote is 0x20 and a control character
// stays below it, so one "has less than 0x21" test finds both; a "has zero
// byte" test after an xor with a backslash finds backslashes. A borrow can
// flag a byte above a flagged one, never below, so the lowest flag is
// exact. Bytes with the high bit set are flagged through high only.
func special(x, high uint64) uint64 {
	qc, backslash := x^(0x02*ones), x^('\\'*ones)
	return ((qc-0x21*ones)&^qc | (backslash-ones)&^backslash | x&high) & highs
}

// firstFlagged is the index of the lowest byte flagged in m.
func firstFlagged(m uint64) int { return bits.TrailingZeros64(m) / 8 }
