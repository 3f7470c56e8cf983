package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/server"
)

// The core alone (what tether daemon runs on): without Claude Code's CLI
// it still starts, with the mock, and says why Claude Code is not there;
// an agent's readiness follows its CLI on disk.
func TestOpenCore(t *testing.T) {
	// No claude, codex or opencode on PATH; git (workspaces use it) only.
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	bin := t.TempDir()
	if err := os.Symlink(git, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	c, err := server.OpenCore(server.Config{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Sessions.Agents()["claude"]; ok {
		t.Error("Claude Code offered without its CLI")
	}
	health := c.AgentHealth()
	if health["mock"] != nil || health["claude"] == nil || health["codex"] == nil {
		t.Errorf("health %v", health)
	}
	closeCore(t, c)

	c, err = server.OpenCore(server.Config{DataDir: t.TempDir(), CLIPath: os.Args[0]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCore(t, c)
	if h := c.AgentHealth(); h["claude"] != nil {
		t.Fatalf("claude at %s not ready: %v", os.Args[0], h["claude"])
	}
	if _, err := server.OpenCore(server.Config{DataDir: t.TempDir(), CLIPath: filepath.Join(t.TempDir(), "none")}, nil); err == nil {
		t.Fatal("a Claude Code CLI named but missing was accepted")
	}
}

func closeCore(t *testing.T, c *server.Core) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Error(err)
	}
}
