package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// tether run --agent codex and --agent opencode on this machine, each with
// the user's own configuration (a HOME whose config points at a fake
// OpenAI API): the reply on the terminal, a shell command run after
// --approve=allow, and --json's canonical events.
func TestRealCLIRunCodexLocally(t *testing.T) { runAgentLocally(t, "codex") }

func TestRealCLIRunOpenCodeLocally(t *testing.T) { runAgentLocally(t, "opencode") }

func runAgentLocally(t *testing.T, kind string) {
	cli := map[string]func(testing.TB) string{"codex": testenv.RequireCodexCLI, "opencode": testenv.RequireOpenCodeCLI}[kind](t)
	fake, err := fakeopenai.Start(fakeopenai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	home := t.TempDir()
	var env []string
	if kind == "codex" {
		env, err = testenv.CodexEnv(home, fake.URL())
	} else {
		env, err = testenv.OpenCodeEnv(home, fake.URL(), true)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := tether(t, dir, "", env, "run", "--agent", kind, "--cli", cli, "SAY hello from "+kind)
	if r.code != 0 || !strings.Contains(r.stdout, "hello from "+kind) {
		t.Fatalf("text: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = tether(t, dir, "", env, "run", "--agent", kind, "--cli", cli, "--approve=allow", "USE_SHELL touch made-by-"+kind)
	if _, err := os.Stat(filepath.Join(dir, "made-by-"+kind)); r.code != 0 || err != nil {
		t.Fatalf("shell: %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	r = tether(t, dir, "", env, "run", "--agent", kind, "--cli", cli, "--json", "--approve=deny", "USE_SHELL touch refused")
	events := parseEvents(t, r.stdout)
	var cmd *agent.Item
	for _, e := range events {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand {
			cmd = e.Item
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "refused")); err == nil || cmd == nil || cmd.Status != agent.ItemDeclined ||
		events[0].Kind != agent.KindSessionStarted || events[0].Session.Agent != kind {
		t.Fatalf("denied: %d command %+v\n%s", r.code, cmd, r.stderr)
	}
}
