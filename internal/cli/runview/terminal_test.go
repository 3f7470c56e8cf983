package runview

import "testing"

// Styling needs a terminal; NO_COLOR set to anything but "" turns it off
// (no-color.org).
func TestColorWanted(t *testing.T) {
	for _, tc := range []struct {
		terminal bool
		noColor  string
		want     bool
	}{
		{true, "", true},
		{true, "1", false},
		{true, "0", false},
		{false, "", false},
		{false, "1", false},
	} {
		if got := ColorWanted(tc.terminal, tc.noColor); got != tc.want {
			t.Errorf("ColorWanted(%v, %q) = %v, want %v", tc.terminal, tc.noColor, got, tc.want)
		}
	}
}
