package claudecode

import "testing"

// plainRun agrees with a byte-by-byte scan at every offset of inputs that
// put each kind of special byte in every position of a word.
func TestPlainRunFindsEverySpecialByte(t *testing.T) {
	slow := func(b []byte, j int) int {
		for ; j < len(b); j++ {
			if c := b[j]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				return j
			}
		}
		return j
	}
	for c := range 256 {
		for pos := range 20 {
			b := []byte("abcdefghijklmnopqrstuvwxyz")
			b[pos] = byte(c)
			for j := 0; j <= len(b); j++ {
				if got, want := plainRun(b, j), slow(b, j); got != want {
					t.Fatalf("plainRun(%q, %d) = %d, want %d", b, j, got, want)
				}
			}
		}
	}
}

func FuzzPlainRun(f *testing.F) {
	f.Add([]byte("The quick brown fox \"jumps\" \\ over\x01 the lazy dog \xff"), 3)
	f.Fuzz(func(t *testing.T, b []byte, j int) {
		if j < 0 || j > len(b) {
			return
		}
		want := j
		for ; want < len(b); want++ {
			if c := b[want]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				break
			}
		}
		if got := plainRun(b, j); got != want {
			t.Fatalf("plainRun(%q, %d) = %d, want %d", b, j, got, want)
		}
	})
}
