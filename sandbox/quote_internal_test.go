package sandbox

import (
	"os/exec"
	"strings"
	"testing"
)

// shellQuote output must come back as the exact same string from sh.
func TestShellQuoteRoundTrip(t *testing.T) {
	var all strings.Builder
	for b := 1; b < 256; b++ {
		all.WriteByte(byte(b))
	}
	words := []string{"", "plain", "with space", "'", "''", `"`, "$HOME", "`id`", "$(id)", "a\nb", `\`, `\'`,
		"-rf", "~", "*", "a=b", "; rm -rf /", all.String(), "héllo ✓"}
	var script strings.Builder
	script.WriteString("printf '%s\\0'")
	for _, w := range words {
		script.WriteString(" " + shellQuote(w))
	}
	out, err := exec.Command("/bin/sh", "-c", script.String()).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(words) {
		t.Fatalf("%d words back, want %d", len(got), len(words))
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("word %d: got %q want %q (quoted %s)", i, got[i], words[i], shellQuote(words[i]))
		}
	}
}
