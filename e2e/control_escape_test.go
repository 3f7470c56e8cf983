package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// Control requests that would make the CLI run a command of the host's
// choosing outside the Bash tool, where the runner's network rewrite does
// not reach: an MCP stdio server, a settings command hook. On a sandboxed
// runner without tool network they must not reach the network either.
func TestRealCLIRunnerControlEscapes(t *testing.T) {
	timed(t)
	tr := startRunner(t, true)
	l := listen(t)

	mcpServers := func() map[string]any {
		return map[string]any{"net": map[string]any{"type": "stdio", "command": "/bin/bash", "args": []string{"-c", l.connectScript()}}}
	}
	flagSettings := func() map[string]any {
		return map[string]any{"hooks": map[string]any{cc.HookPreToolUse: []any{map[string]any{
			"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": l.connectScript() + " >/dev/null"}},
		}}}}
	}
	// waitNoConnection gives a started command time to connect.
	waitNoConnection := func(t *testing.T, before int32) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if l.accepted.Load() != before {
				t.Fatalf("a command the host chose reached the network (%d connections)", l.accepted.Load()-before)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	t.Run("DefaultMode/mcp_set_servers", func(t *testing.T) {
		timed(t)
		before := l.accepted.Load()
		c, _ := seedSession(t, tr, newWorkspaceID("ctl"), map[string]any{"model": "claude-sonnet-4-5"})
		c.send(map[string]any{"type": "control", "request_id": "c1", "subtype": "mcp_set_servers", "params": map[string]any{"servers": mcpServers()}})
		f := c.next()
		t.Logf("answer: %v", f)
		waitNoConnection(t, before)
		c.stop()
	})
	t.Run("DefaultMode/apply_flag_settings", func(t *testing.T) {
		timed(t)
		before := l.accepted.Load()
		c, _ := seedSession(t, tr, newWorkspaceID("ctl"), map[string]any{"model": "claude-sonnet-4-5", "allowed_tools": []string{"Bash"}})
		c.send(map[string]any{"type": "control", "request_id": "c1", "subtype": "apply_flag_settings", "params": map[string]any{"settings": flagSettings()}})
		f := c.next()
		t.Logf("answer: %v", f)
		res, _ := c.turn("q1", bashPrompt("echo hi"))
		t.Logf("result: %v", res["result"])
		waitNoConnection(t, before)
		c.stop()
	})
	t.Run("RelayMode/mcp_set_servers", func(t *testing.T) {
		timed(t)
		before := l.accepted.Load()
		opts, _ := relayOpts(tr)
		ctx := testCtx(t)
		c, err := claude.Connect(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		servers := map[string]json.RawMessage{}
		for k, v := range mcpServers() {
			servers[k], _ = json.Marshal(v)
		}
		raw, err := c.SetMCPServers(ctx, servers)
		t.Logf("answer: %s %v", raw, err)
		waitNoConnection(t, before)
	})
	t.Run("RelayMode/apply_flag_settings", func(t *testing.T) {
		timed(t)
		before := l.accepted.Load()
		opts, _ := relayOpts(tr)
		ctx := testCtx(t)
		c, err := claude.Connect(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		settings, _ := json.Marshal(flagSettings())
		raw, err := c.Control(ctx, cc.ApplyFlagSettingsRequest{Settings: settings})
		t.Logf("answer: %s %v", raw, err)
		if err := c.Query(ctx, bashPrompt("echo hi")); err != nil {
			t.Fatal(err)
		}
		res, err := claude.FinalResult(c.Receive(ctx))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("result: %q", res.Result)
		waitNoConnection(t, before)
	})
}
