package opencode

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind: every
// session's reader, timer and HTTP connection ends with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
