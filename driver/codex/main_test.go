package codex_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind: every
// session's reader, watchdog and process must end with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
