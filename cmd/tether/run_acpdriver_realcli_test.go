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

// tether run --agent opencode-acp: OpenCode through the ACP driver, with
// the user's own OpenCode configuration (pointing at a fake OpenAI API):
// the reply, a shell command run after --approve=allow, and one declined
// after --approve=deny.
func TestRealCLIRunOpenCodeACPLocally(t *testing.T) {
	cli := testenv.RequireOpenCodeCLI(t)
	fake, err := fakeopenai.Start(fakeopenai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	env, err := testenv.OpenCodeEnv(t.TempDir(), fake.URL(), true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(args ...string) result {
		return tether(t, dir, "", env, append([]string{"run", "--agent", "opencode-acp", "--cli", cli}, args...)...)
	}
	if r := run("SAY hello from opencode acp"); r.code != 0 || !strings.Contains(r.stdout, "hello from opencode acp") {
		t.Fatalf("text: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run("--approve=allow", "USE_SHELL touch made-over-acp"); r.code != 0 {
		t.Fatalf("shell: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "made-over-acp")); err != nil {
		t.Fatal(err)
	}
	r := run("--json", "--approve=deny", "USE_SHELL touch refused")
	var cmd *agent.Item
	for _, e := range parseEvents(t, r.stdout) {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand {
			cmd = e.Item
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "refused")); err == nil || cmd == nil || cmd.Status != agent.ItemDeclined {
		t.Fatalf("denied: %d command %+v\n%s", r.code, cmd, r.stderr)
	}
}

// A `tether serve` runner offers opencode-acp with the operator's OpenCode
// configuration and runs its turn.
func TestRealCLIServeOpenCodeACP(t *testing.T) {
	cli := testenv.RequireOpenCodeCLI(t)
	fake, err := fakeopenai.Start(fakeopenai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	opHome := t.TempDir()
	opEnv, err := testenv.OpenCodeEnv(opHome, fake.URL(), true)
	if err != nil {
		t.Fatal(err)
	}
	var set []string
	for _, kv := range opEnv {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "HOME" || k == "XDG_CONFIG_HOME" || k == "npm_config_registry" || strings.HasPrefix(k, "OPENCODE_") {
			set = append(set, kv)
		}
	}
	p := startServe(t, envWith(set...), "--cli", "opencode-acp="+cli)
	if offered, unavailable := agentsOf(t, p); offered["opencode-acp"] == nil {
		t.Fatalf("opencode-acp not offered: %v\n%s", unavailable["opencode-acp"], p.log())
	}
	if out := turnOf(t, p, "opencode-acp", "SAY hello from a runner over acp"); !strings.Contains(out, "hello from a runner over acp") {
		t.Fatalf("the turn:\n%s\nrunner:\n%s", out, p.log())
	}
}
