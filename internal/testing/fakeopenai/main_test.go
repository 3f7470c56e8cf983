package fakeopenai

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: streams must
// end with their client and Close must wait for every handler.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
