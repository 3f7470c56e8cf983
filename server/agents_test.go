package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/server"
)

// get calls the sessions API with tokenA and decodes the answer.
func get(t *testing.T, r *running, method, path, body string, out any) int {
	t.Helper()
	return runnertest.Call(t, "http://"+r.addr, tokenA, method, path, body, out)
}

// The sessions API offers Claude Code and the mock on any runner; a kind
// whose CLI is not on PATH is not offered, and a session asked of it
// says why and how to give it.
func TestAgentsOffered(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin") // git, but no codex nor opencode
	r := serve(t, "text", server.Config{Auth: auth.LoadOptions{Tokens: []string{tokenA}}})
	var agents struct {
		Agents      map[string]any
		Unavailable map[string]string
	}
	if code := get(t, r, "GET", "/v1/agents", "", &agents); code != 200 || len(agents.Agents) != 2 ||
		agents.Agents["claude"] == nil || agents.Agents["mock"] == nil ||
		!strings.Contains(agents.Unavailable["codex"], "--cli codex=PATH") || agents.Unavailable["opencode"] == "" {
		t.Fatalf("agents: %d %+v", code, agents)
	}
	var refused struct {
		Error struct{ Code, Message string }
	}
	code := get(t, r, "POST", "/v1/sessions", `{"agent":"codex","workspace_id":"w"}`, &refused)
	if code != 400 || refused.Error.Code != "unknown_agent" || !strings.Contains(refused.Error.Message, "--cli codex=PATH") {
		t.Fatalf("codex: %d %+v", code, refused)
	}
	// The mock runs a turn with no CLI and no key.
	var info struct{ ID string }
	if code := get(t, r, "POST", "/v1/sessions", `{"agent":"mock","workspace_id":"m","prompt":"hello"}`, &info); code != 201 {
		t.Fatalf("mock: %d", code)
	}
}

// A CLI given on purpose that cannot be used stops the runner with the
// reason, rather than a runner that quietly lacks the agent.
func TestGivenCLIMustWork(t *testing.T) {
	dir := t.TempDir()
	notCodex := filepath.Join(dir, "codex")
	if err := os.WriteFile(notCodex, []byte("#!/bin/sh\necho codex-cli 0.1.0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for cli, want := range map[string]string{
		filepath.Join(dir, "missing"): "missing",
		notCodex:                      "0.1.0",
	} {
		cfg := server.Config{Addr: "127.0.0.1:0", DataDir: filepath.Join(dir, "data"), CLIPath: os.Args[0],
			CLIs: map[string]string{"codex": cli}, RecordDir: filepath.Join(dir, "records"),
			Auth: auth.LoadOptions{Tokens: []string{tokenA}, Getenv: func(string) string { return "" }}}
		err := server.Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("codex=%s: %v", cli, err)
		}
	}
}
