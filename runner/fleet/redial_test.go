package fleet

import (
	"testing"
	"time"
)

// A peer that is down is logged once a minute, whatever the pool's
// redials; another peer, or any other error, is logged as it comes.
func TestRedialNotesQuietRepeats(t *testing.T) {
	n := &redialNotes{last: map[string]time.Time{}}
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	down := "Error trying to connect to route (attempt 1): dial tcp 127.0.0.1:16222: connect: connection refused"
	again := "Error trying to connect to route (attempt 14): dial tcp 127.0.0.1:16222: connect: connection refused"
	other := "Error trying to connect to route (attempt 1): dial tcp 127.0.0.1:16221: connect: connection refused"
	for _, c := range []struct {
		msg   string
		at    time.Duration
		quiet bool
	}{
		{down, 0, false},
		{again, time.Second, true},
		{other, time.Second, false},
		{"JetStream cluster no metadata leader", 2 * time.Second, false},
		{again, 30 * time.Second, true},
		{again, 61 * time.Second, false},
		{again, 62 * time.Second, true},
	} {
		if got := n.quiet(c.msg, t0.Add(c.at)); got != c.quiet {
			t.Errorf("at %v, %q: quiet %v, want %v", c.at, c.msg, got, c.quiet)
		}
	}
}
