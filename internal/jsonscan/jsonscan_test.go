package jsonscan

import "testing"

func slow(b []byte, j int, stopHigh bool) int {
	for ; j < len(b); j++ {
		if c := b[j]; c < 0x20 || c == '"' || c == '\\' || stopHigh && c >= 0x80 {
			return j
		}
	}
	return j
}

// Both scans agree with a byte-by-byte scan at every offset of inputs that
// put each byte value in every position of a word.
func TestScansFindEveryStoppingByte(t *testing.T) {
	for c := range 256 {
		for pos := range 20 {
			b := []byte("abcdefghijklmnopqrstuvwxyz")
			b[pos] = byte(c)
			for j := 0; j <= len(b); j++ {
				if got, want := Plain(b, j), slow(b, j, false); got != want {
					t.Fatalf("Plain(%q, %d) = %d, want %d", b, j, got, want)
				}
				if got, want := PlainASCII(b, j), slow(b, j, true); got != want {
					t.Fatalf("PlainASCII(%q, %d) = %d, want %d", b, j, got, want)
				}
			}
		}
	}
}

func FuzzScans(f *testing.F) {
	f.Add([]byte("The quick brown fox \"jumps\" \\ over\x01 the lazy dog \xff"), 3)
	f.Fuzz(func(t *testing.T, b []byte, j int) {
		if j < 0 || j > len(b) {
			return
		}
		if got, want := Plain(b, j), slow(b, j, false); got != want {
			t.Fatalf("Plain(%q, %d) = %d, want %d", b, j, got, want)
		}
		if got, want := PlainASCII(b, j), slow(b, j, true); got != want {
			t.Fatalf("PlainASCII(%q, %d) = %d, want %d", b, j, got, want)
		}
	})
}
