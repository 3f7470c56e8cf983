package claudecli

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/internal/mockclaude"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the mock CLI for the agent driver's tests.
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}
