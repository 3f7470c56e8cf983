package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

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

// marshalString is what AppendString must write: json.Marshal's bytes, or
// an Encoder's without HTML escaping.
func marshalString(t *testing.T, s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// AppendString writes encoding/json's bytes for each byte value in every
// position of a word, and for the runes it treats apart.
func TestAppendStringIsEncodingJSON(t *testing.T) {
	for c := range 256 {
		for pos := range 20 {
			b := []byte("abcdefghijklmnopqrstuvwxyz")
			b[pos] = byte(c)
			for _, s := range []string{string(b), string(b) + "\u2028é\u2029", "é" + string(b[:pos+1])} {
				checkAppendString(t, s)
			}
		}
	}
}

func checkAppendString(t *testing.T, s string) {
	t.Helper()
	for _, html := range []bool{true, false} {
		want := marshalString(t, s, html)
		if got := string(AppendString([]byte("x"), s, html)); got != "x"+want {
			t.Fatalf("AppendString(%q, html %v) = %s, want x%s", s, html, got, want)
		}
		if got := string(AppendString(nil, []byte(s), html)); got != want {
			t.Fatalf("AppendString([]byte(%q), html %v) = %s, want %s", s, html, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("hello <b>&</b> \"q\" \\ \n\t\x01 \u2028 é \xff\xfe")
	f.Add("The quick brown fox jumps over the lazy dog ")
	f.Fuzz(checkAppendString)
}

// BenchmarkAppendString is an event's text: a sentence of plain ASCII.
func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat("The quick brown fox ", 5)
	b.SetBytes(int64(len(s)))
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = AppendString(buf[:0], s, true)
	}
}
