package main

import (
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// realClaude starts the fake Anthropic API and returns the real CLI and
// the environment that points it there, offline.
func realClaude(t *testing.T) (string, []string) {
	t.Helper()
	bin := testenv.RequireClaudeCLI(t)
	srv, err := fakeanthropic.Start(fakeanthropic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return bin, testenv.ClaudeEnv(t.TempDir(), srv.URL())
}

// --json with the real Claude Code: canonical events, the command the
// model ran as a command item with its output, usage and a completed turn.
func TestRealCLIRunClaudeJSON(t *testing.T) {
	bin, env := realClaude(t)
	r := tether(t, t.TempDir(), "", env, "run", "--cli", bin, "--model", "claude-sonnet-4-5", "--json", "--approve=allow", "USE_BASH")
	if r.code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	events := parseEvents(t, r.stdout)
	var cmd *agent.Item
	var turn *agent.TurnInfo
	var usage *agent.Usage
	for _, e := range events {
		switch {
		case e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand:
			cmd = e.Item
		case e.Kind == agent.KindUsage:
			usage = e.Usage
		case e.Kind == agent.KindTurnCompleted:
			turn = e.Turn
		}
	}
	if events[0].Kind != agent.KindSessionStarted || events[0].Session.NativeID == "" {
		t.Errorf("first event %+v", events[0])
	}
	if cmd == nil || cmd.Command.Command != "echo hello" || !strings.Contains(cmd.Command.Output, "hello") {
		t.Errorf("command item %+v", cmd)
	}
	if turn == nil || turn.Status != agent.TurnCompleted || usage == nil || usage.OutputTokens == 0 {
		t.Errorf("turn %+v, usage %+v", turn, usage)
	}
}

// Without --json the real Claude Code shows as it always has: the tool
// line, its result and the summary.
func TestRealCLIRunClaudeConsoleUnchanged(t *testing.T) {
	bin, env := realClaude(t)
	r := tether(t, t.TempDir(), "", env, "run", "--cli", bin, "--model", "claude-sonnet-4-5", "--approve=allow", "USE_BASH")
	if r.code != 0 || !strings.Contains(r.stdout, "⏺ Bash: echo hello\n") || !strings.Contains(r.stdout, "\n✓ ") {
		t.Errorf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
