package sandbox_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// probeEnv makes the test binary a syscall probe instead (see
// syscallProbe): the seccomp tests run it inside sandboxes.
const probeEnv = "TETHER_SANDBOX_SYSCALL_PROBE"

func TestMain(m *testing.M) {
	if os.Getenv(probeEnv) == "1" {
		syscallProbe()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
