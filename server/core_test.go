package server_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/sandbox"
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
	t.Setenv("HOME", t.TempDir()) // nor where Claude Code installs itself
	c, err := server.OpenCore(server.Config{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Sessions.Agents()["claude"]; ok {
		t.Error("Claude Code offered without its CLI")
	}
	health := c.AgentHealth()
	if health["mock"] != nil || health["claude"] == nil || health["codex"] == nil ||
		!strings.Contains(health["claude"].Error(), "--cli claude=PATH") {
		t.Errorf("health %v", health)
	}
	// Every registered kind, offered or not, in the default order.
	if got := c.AgentKinds(); !slices.Equal(got, driver.Names()) || len(health) != len(got) {
		t.Errorf("kinds %v, the registry's %v", got, driver.Names())
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

// Closing the core (tether daemon's SIGTERM) is graceful: no new turns,
// the turns in progress run on — an approval answered meanwhile lets its
// turn complete — and the ones left when the grace ends are interrupted.
func TestCoreCloseLetsTurnsFinish(t *testing.T) {
	c, err := server.OpenCore(server.Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Sessions
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func(ws, prompt string) (string, <-chan agent.Event) {
		t.Helper()
		info, err := m.Create(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: ws})
		if err != nil {
			t.Fatal(err)
		}
		events := make(chan agent.Event, 256)
		go func() {
			defer close(events)
			for e, err := range m.Events(ctx, info.ID, 0) {
				if err != nil {
					return
				}
				events <- e
			}
		}()
		if prompt != "" {
			if err := m.Prompt(ctx, info.ID, agent.Prompt{Text: prompt}); err != nil {
				t.Fatal(err)
			}
		}
		return info.ID, events
	}
	until := func(events <-chan agent.Event, k agent.Kind) agent.Event {
		t.Helper()
		for e := range events {
			if e.Kind == k {
				return e
			}
		}
		t.Fatalf("no %s", k)
		return agent.Event{}
	}
	slow, slowEvents := start("slow", "SLOW")
	until(slowEvents, agent.KindItemDelta)
	asking, askingEvents := start("asking", "REQUEST_APPROVAL")
	approval := until(askingEvents, agent.KindApprovalRequested).Approval
	idle, _ := start("idle", "")

	grace, endGrace := context.WithCancel(ctx)
	closed := make(chan error, 1)
	go func() { closed <- c.Close(grace) }()
	for {
		err := m.Prompt(ctx, idle, agent.Prompt{Text: "hello"})
		if errors.Is(err, sessions.ErrShuttingDown) {
			break
		}
		if err != nil && !errors.Is(err, agent.ErrTurnInProgress) {
			t.Fatalf("a prompt while closing: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatal("prompts still taken while closing")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := m.Resolve(ctx, asking, agent.Resolution{ApprovalID: approval.ID, Decision: agent.Allow, Cause: agent.CauseClient}); err != nil {
		t.Fatal(err)
	}
	if end := until(askingEvents, agent.KindTurnCompleted); end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("the approved turn ended %s", end.Turn.Status)
	}
	if info, err := m.Get(slow); err != nil || info.State != sessions.StateRunning {
		t.Fatalf("the slow turn before the grace ended: %+v %v", info, err)
	}
	endGrace()
	if end := until(slowEvents, agent.KindTurnCompleted); end.Turn.Status != agent.TurnInterrupted {
		t.Fatalf("the slow turn ended %s", end.Turn.Status)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// An agent CLI found on PATH that cannot be used (another version than
// the tested one) is left out with the reason and the remedy; a sandbox
// the machine cannot make (here: no bwrap) stops the core instead of
// leaving it without its agents.
func TestAgentOnPathThatCannotRun(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	bin := t.TempDir()
	if err := os.Symlink(git, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	codex := filepath.Join(bin, "codex")
	writeCodex := func(version string) {
		if err := os.WriteFile(codex, []byte("#!/bin/sh\necho "+version+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	t.Setenv("HOME", t.TempDir())

	writeCodex("codex-cli 0.1.0")
	c, err := server.OpenCore(server.Config{DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	why := c.Sessions.Unavailable()["codex"]
	closeCore(t, c)
	if !strings.Contains(why, `"codex-cli 0.1.0"`) ||
		!strings.Contains(why, "--allow-untested-agents") {
		t.Fatalf("codex 0.1.0 unavailable: %q", why)
	}

	writeCodex("codex-cli 0.169.0")
	_, err = server.OpenCore(server.Config{DataDir: t.TempDir(), Sandbox: true}, nil)
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("a sandbox that cannot be made: %v", err)
	}
}
