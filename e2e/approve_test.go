package e2e

import (
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/cli/runview"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// What `tether run --approve=deny` denies, with the real CLI: only the calls
// the CLI asks about. It runs a command it deems safe (echo) without asking;
// with --ask-every-tool that call reaches the approver too and is denied.
// Locally and through a runner, where the hook runs in the host (on a
// sandboxed runner beside the runner's own Bash hook, and there every Bash
// call asks anyway).
func TestRealCLIApproveDenyAndAskEveryTool(t *testing.T) {
	timed(t)
	targets := map[string]target{"Local": localTarget(t), "Runner": runnerTarget(startRunner(t, false)),
		"RunnerSandbox": runnerTarget(startRunner(t, true))}
	for _, name := range []string{"Local", "Runner", "RunnerSandbox"} {
		tg := targets[name]
		for _, every := range []bool{false, true} {
			label := name + "/Deny"
			if every {
				label += "AskEveryTool"
			}
			t.Run(label, func(t *testing.T) {
				timed(t)
				opts, _ := tg.opts(t)
				var out, errOut testenv.SyncBuffer
				cfg := runview.Config{Options: opts, Prompt: bashPrompt("echo deny-probe"), Out: &out, Err: &errOut,
					Approve: runview.ApproveDeny, AskEveryTool: every}
				if code := runview.Run(testCtx(t), cfg); code != runview.ExitOK {
					t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
				}
				ran := strings.Contains(out.String(), "tool said: deny-probe")
				denied := strings.Contains(out.String(), "denied by tether (--approve=deny)")
				if every && (ran || !denied) {
					t.Errorf("with --ask-every-tool the command was not denied:\n%s", out.String())
				}
				// On a sandboxed runner the CLI judges the wrapped command,
				// which is never read-only: every Bash call asks there.
				asks := every || name == "RunnerSandbox"
				if !asks && (!ran || denied) {
					// The CLI's own rule the docs describe: if it changes,
					// the docs must too.
					t.Errorf("the CLI no longer runs echo without asking; update the --approve docs:\n%s", out.String())
				}
				if asks && !every && (ran || !denied) {
					t.Errorf("on a sandboxed runner echo ran without asking; update the --approve docs:\n%s", out.String())
				}
			})
		}
	}
}
