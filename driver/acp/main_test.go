package acp_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind: every
// session's connection, turn and process must end with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
