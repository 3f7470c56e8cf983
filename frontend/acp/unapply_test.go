package acp_test

import (
	"errors"
	"testing"

	"github.com/tetherhq/tether/frontend/acp"
)

func TestUnapply(t *testing.T) {
	for _, tc := range []struct{ name, newText, diff, old string }{
		{"append", "a\nb\nc\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n b\n+c\n", "a\nb\n"},
		{"replace", "a\nX\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+X\n c\n", "a\nb\nc\n"},
		{"two hunks", "1\nX\n3\n4\n5\n6\n7\nY\n", "@@ -1,3 +1,3 @@\n 1\n-2\n+X\n 3\n@@ -7,2 +7,2 @@\n 7\n-8\n+Y\n", "1\n2\n3\n4\n5\n6\n7\n8\n"},
		{"delete a line", "a\nc\n", "@@ -1,3 +1,2 @@\n a\n-b\n c\n", "a\nb\nc\n"},
		{"emptied", "", "@@ -1,1 +0,0 @@\n-a\n", "a\n"},
	} {
		got, err := acp.Unapply(tc.newText, tc.diff)
		if err != nil || got != tc.old {
			t.Errorf("%s: %q %v, want %q", tc.name, got, err, tc.old)
		}
	}
	for _, tc := range []struct{ name, newText, diff string }{
		{"no hunk", "a\n", "just words"},
		{"text changed since", "a\nZ\n", "@@ -1,1 +1,2 @@\n a\n+b\n"},
		{"past the end", "a\n", "@@ -5,1 +5,2 @@\n x\n+y\n"},
		{"bad header", "a\n", "@@ nonsense @@\n+a\n"},
	} {
		if _, err := acp.Unapply(tc.newText, tc.diff); !errors.Is(err, acp.ErrDiff) {
			t.Errorf("%s: %v, want ErrDiff", tc.name, err)
		}
	}
}

// FuzzUnapply: any diff over any text is taken back or refused with a
// *DiffError, never a panic.
func FuzzUnapply(f *testing.F) {
	f.Add("a\nb\n", "@@ -1,1 +1,2 @@\n a\n+b\n")
	f.Add("", "@@ -0,0 +1 @@\n")
	f.Add("x", "@@ -1 +99999999999999999999 @@\n+x")
	f.Fuzz(func(t *testing.T, newText, diff string) {
		if _, err := acp.Unapply(newText, diff); err != nil && !errors.Is(err, acp.ErrDiff) {
			t.Fatalf("untyped error %v", err)
		}
	})
}
