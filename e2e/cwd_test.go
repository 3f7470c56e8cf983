package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
)

// Options.Cwd with a runner is a directory inside the session's workspace:
// the CLI and its Bash commands start there, sandbox on or off. A path on
// the host's machine is refused with a sentence saying what Cwd means
// there, as is every option a runner cannot honour.
func TestRealCLIRunnerCwd(t *testing.T) {
	timed(t)
	for _, sandboxed := range []bool{true, false} {
		name := map[bool]string{true: "Sandbox", false: "NoSandbox"}[sandboxed]
		t.Run(name, func(t *testing.T) {
			tr := startRunner(t, sandboxed)
			opts, ws := relayOpts(tr)
			sub := filepath.Join(ws, "src", "app")
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			opts.Cwd = "src/app"
			if got := relayBash(t, opts, "pwd"); !strings.Contains(got, sub) {
				t.Fatalf("pwd in Cwd %q said %q, want %s", opts.Cwd, got, sub)
			}
			opts.Cwd = "missing"
			if _, err := claude.Connect(testCtx(t), opts); err == nil || !strings.Contains(err.Error(), `cwd "missing": no such directory in the workspace`) {
				t.Fatalf("a missing Cwd: %v", err)
			}
		})
	}
}
