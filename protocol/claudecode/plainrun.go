package claudecode

import (
	"encoding/binary"
	"math/bits"
)

// plainRun returns the index of the first byte at or after j that ends
// or complicates a JSON string — a quote, a backslash, a control character
// or a non-ASCII byte — or len(b). It tests eight bytes at a time: most
// of a line is plain string content.
func plainRun(b []byte, j int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; j+8 <= len(b); j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		quote, backslash := x^('"'*ones), x^('\\'*ones)
		// Each term flags the high bit of bytes that are, respectively:
		// below 0x20, 0x80 or above, a quote, a backslash (the classic
		// "has less than" and "has zero byte" tests). A borrow can flag a
		// byte above a flagged one, never below: the lowest flag is exact.
		special := ((x-0x20*ones)&^x | x | (quote-ones)&^quote | (backslash-ones)&^backslash) & highs
		if special != 0 {
			return j + bits.TrailingZeros64(special)/8
		}
	}
	for ; j < len(b); j++ {
		if c := b[j]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return j
		}
	}
	return j
}
