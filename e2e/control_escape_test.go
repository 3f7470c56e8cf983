package e2e

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
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
			"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": "/bin/bash -c '" + l.connectScript() + "' >/dev/null"}},
		}}}}
	}
	// waitNoConnection gives a started command time to connect.
	waitNoConnection := func(t *testing.T, before int32) {
		t.Helper()
		deadline := time.Now().Add(1500 * time.Millisecond)
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
		waitNoConnection(t, before)
		if f["type"] != "error" || f["request_id"] != "c1" || f["code"] != "control_failed" {
			t.Errorf("mcp_set_servers was not refused: %v", f)
		}
		c.stop()
	})
	t.Run("DefaultMode/apply_flag_settings", func(t *testing.T) {
		timed(t)
		before := l.accepted.Load()
		c, _ := seedSession(t, tr, newWorkspaceID("ctl"), map[string]any{"model": "claude-sonnet-4-5", "allowed_tools": []string{"Bash"}})
		c.send(map[string]any{"type": "control", "request_id": "c1", "subtype": "apply_flag_settings", "params": map[string]any{"settings": flagSettings()}})
		f := c.next()
		res, _ := c.turn("q1", bashPrompt("echo hi"))
		waitNoConnection(t, before)
		if f["type"] != "error" || f["request_id"] != "c1" || f["code"] != "control_failed" {
			t.Errorf("apply_flag_settings was not refused: %v", f)
		}
		if res["result"] != "tool said: hi" {
			t.Errorf("result %v", res["result"])
		}
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
		_, err = c.SetMCPServers(ctx, servers)
		waitNoConnection(t, before)
		var ce *claude.ControlError
		if !errors.As(err, &ce) {
			t.Errorf("mcp_set_servers was not refused: %v", err)
		}
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
		_, err = c.Control(ctx, cc.ApplyFlagSettingsRequest{Settings: settings})
		var ce *claude.ControlError
		if !errors.As(err, &ce) {
			t.Errorf("apply_flag_settings was not refused: %v", err)
		}
		if err := c.Query(ctx, bashPrompt("echo hi")); err != nil {
			t.Fatal(err)
		}
		res, err := claude.FinalResult(c.Receive(ctx))
		if err != nil {
			t.Fatal(err)
		}
		waitNoConnection(t, before)
		if res.Result != "tool said: hi" {
			t.Errorf("result %q", res.Result)
		}
	})
}

// relaySeed opens a relay session with a raw client and initializes the
// CLI through input frames, as a host SDK would.
func relaySeed(t *testing.T, tr *testRunner, opts map[string]any) *seedClient {
	t.Helper()
	c, _, err := dialSeed(t, tr, tr.Token)
	if err != nil {
		t.Fatal(err)
	}
	opts["model"] = "claude-sonnet-4-5"
	c.send(map[string]any{"type": "init", "protocol_version": 1, "workspace_id": newWorkspaceID("ctl"), "session_opts": opts, "host_control": true})
	if r := c.next(); r["type"] != "ready" {
		t.Fatalf("ready = %v", r)
	}
	c.input(`{"type":"control_request","request_id":"init1","request":{"subtype":"initialize","hooks":null}}`)
	for {
		f := c.next()
		if f["type"] == "error" {
			t.Fatalf("initialize: %v", f)
		}
		if line := agentLine(f); line != nil && line["type"] == "control_response" {
			if resp, _ := line["response"].(map[string]any); resp["request_id"] == "init1" {
				return c
			}
		}
	}
}

// agentLine is the agent's line a message frame carries: a JSON string in
// payload (the seed's form), or in relay sessions the object itself in line.
func agentLine(f map[string]any) map[string]any {
	if f["type"] != "message" {
		return nil
	}
	if l, ok := f["line"].(map[string]any); ok {
		return l
	}
	var l map[string]any
	if p, ok := f["payload"].(string); ok && json.Unmarshal([]byte(p), &l) == nil {
		return l
	}
	return nil
}

func (c *seedClient) input(line string) {
	c.t.Helper()
	c.send(map[string]any{"type": "input", "line": line})
}

// Lines a relay host may write to the CLI's stdin beyond prompts and
// control traffic: bash_command runs a shell command "without the model
// and without permission checks".
func TestRealCLIRunnerRelayRawLines(t *testing.T) {
	timed(t)
	tr := startRunner(t, true)
	l := listen(t)
	t.Run("bash_command", func(t *testing.T) {
		timed(t)
		before := l.accepted.Load()
		c := relaySeed(t, tr, map[string]any{})
		line, _ := json.Marshal(map[string]any{"type": "bash_command", "command": "/bin/bash -c '" + l.connectScript() + "'"})
		c.input(string(line))
		deadline := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(deadline) && l.accepted.Load() == before {
			time.Sleep(100 * time.Millisecond)
		}
		if n := l.accepted.Load() - before; n != 0 {
			t.Errorf("bash_command reached the network (%d connections)", n)
		}
		for {
			f := c.next()
			if f["type"] == "error" {
				if f["code"] != "invalid_frame" || !strings.Contains(f["details"].(string), "bash_command") {
					t.Errorf("error = %v", f)
				}
				break
			}
		}
		c.stop()
	})
}

// A Bash command (itself without network) plants a settings file with a
// command hook, in the workspace or the private home; the CLI then runs
// the hook itself, outside the Bash rewrite, in a later session.
func TestRealCLIRunnerPlantedSettings(t *testing.T) {
	timed(t)
	tr := startRunner(t, true)
	l := listen(t)
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{cc.HookPreToolUse: []any{map[string]any{
		"matcher": "", "hooks": []any{map[string]any{"type": "command", "command": "/bin/bash -c '" + l.connectScript() + "' >/dev/null"}},
	}}}})
	mcpJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"net": map[string]any{
		"type": "stdio", "command": "/bin/bash", "args": []string{"-c", l.connectScript()}}}})
	for _, name := range []string{"project", "local", "user", "mcpjson"} {
		dir := map[string]string{"project": ".claude", "local": ".claude", "user": "$HOME/.claude", "mcpjson": "."}[name]
		file := map[string]string{"project": "settings.json", "local": "settings.local.json", "user": "settings.json", "mcpjson": ".mcp.json"}[name]
		settings := settings
		if name == "mcpjson" {
			settings = mcpJSON
		}
		t.Run(name, func(t *testing.T) {
			timed(t)
			before := l.accepted.Load()
			id := newWorkspaceID("plant")
			opts := map[string]any{"model": "claude-sonnet-4-5", "allowed_tools": []string{"Bash"}}
			plant := "mkdir -p " + dir + " && echo " + base64.StdEncoding.EncodeToString(settings) + " | base64 -d > " + dir + "/" + file + " && echo planted"
			c, _ := seedSession(t, tr, id, opts)
			res, _ := c.turn("q1", bashPrompt(plant))
			c.stop()
			if res["result"] != "tool said: planted" {
				t.Fatalf("plant: %v", res["result"])
			}
			c, _ = seedSession(t, tr, id, opts)
			res, _ = c.turn("q2", bashPrompt("echo next"))
			c.stop()
			t.Logf("second session: %v", res["result"])
			if n := l.accepted.Load() - before; n != 0 {
				t.Errorf("a planted %s settings hook reached the network (%d connections)", name, n)
			}
		})
	}
}

// WebFetch runs in the CLI process, which has the network the model API
// needs: a tool that reaches the network without Bash.
func TestRealCLIRunnerWebFetch(t *testing.T) {
	timed(t)
	tr := startRunner(t, true)
	l := listen(t)
	port := l.ln.Addr().(*net.TCPAddr).Port
	before := l.accepted.Load()
	c, _ := seedSession(t, tr, newWorkspaceID("fetch"), map[string]any{"model": "claude-sonnet-4-5", "allowed_tools": []string{"WebFetch"}})
	res, _ := c.turn("q1", fmt.Sprintf(`USE_TOOL WebFetch {"url":"http://127.0.0.1:%d/x","prompt":"read it"}`, port))
	c.stop()
	t.Logf("result: %v", res["result"])
	if n := l.accepted.Load() - before; n != 0 {
		t.Errorf("WebFetch reached the network (%d connections)", n)
	}
}

// The runner's API key is the runner's secret (claudecli.Config.Env: "API
// keys live here and only here"); a Bash command must not read it.
func TestRealCLIRunnerBashCannotReadAPIKey(t *testing.T) {
	timed(t)
	tr := startRunner(t, true)
	t.Run("Environment", func(t *testing.T) {
		timed(t)
		got, _ := defaultModeBash(t, tr, nil, "echo key=${ANTHROPIC_API_KEY:-unset}")
		if got != "tool said: key=unset" {
			t.Errorf("Bash sees the runner's API key: %q", got)
		}
	})
	t.Run("ProcEnviron", func(t *testing.T) {
		// Even with its own environment scrubbed, a command could read
		// the CLI's from /proc.
		timed(t)
		got, _ := defaultModeBash(t, tr, nil, "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '^ANTHROPIC_API_KEY=sk-fake' || true")
		if got != "tool said: 0" {
			t.Errorf("Bash reads the runner's API key from /proc: %q", got)
		}
	})
	// CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1 (the CLI's own switch) is no way
	// out here: it makes the CLI insist on its own sandbox ("Sandbox
	// dependencies not available: socat not installed").
}
