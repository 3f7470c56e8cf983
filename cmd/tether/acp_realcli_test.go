package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// realAgentACP is what tether acp --agent kind needs to run the real CLI
// against a fake model server: its environment and the acp arguments.
func realAgentACP(t *testing.T, kind string) (env, args []string) {
	t.Helper()
	home := t.TempDir()
	args = []string{"--agent", kind, "--data-dir", filepath.Join(t.TempDir(), "acp")}
	slow := 150 * time.Millisecond
	switch kind {
	case "claude":
		cli := testenv.RequireClaudeCLI(t)
		fake, err := fakeanthropic.Start(fakeanthropic.Options{SlowChunkDelay: slow})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fake.Close() })
		return append(testenv.ClaudeEnv(home, fake.URL()), "XDG_STATE_HOME="+t.TempDir()), append(args, "--cli", cli)
	case "codex", "opencode":
		fake, err := fakeopenai.Start(fakeopenai.Options{SlowChunkDelay: slow})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fake.Close() })
		var cli string
		if kind == "codex" {
			cli = testenv.RequireCodexCLI(t)
			env, err = testenv.CodexEnv(home, fake.URL())
		} else {
			cli = testenv.RequireOpenCodeCLI(t)
			env, err = testenv.OpenCodeEnv(home, fake.URL(), true)
		}
		if err != nil {
			t.Fatal(err)
		}
		return append(env, "XDG_STATE_HOME="+t.TempDir()), append(args, "--cli", cli)
	}
	t.Fatalf("no agent %s", kind)
	return nil, nil
}

// The whole ACP TCK against tether acp with each real CLI behind it,
// locally, against the fake model servers.
func TestRealCLIACPConformanceClaude(t *testing.T)   { realTCK(t, "claude") }
func TestRealCLIACPConformanceCodex(t *testing.T)    { realTCK(t, "codex") }
func TestRealCLIACPConformanceOpenCode(t *testing.T) { realTCK(t, "opencode") }

func realTCK(t *testing.T, kind string) {
	env, args := realAgentACP(t, kind)
	runTCK(t, env, args)
}
