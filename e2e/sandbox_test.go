package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// bashPrompt makes the fake model call Bash with command.
func bashPrompt(command string) string {
	input, _ := json.Marshal(map[string]string{"command": command})
	return "USE_TOOL Bash " + string(input)
}

// defaultModeBash runs one Bash command through a default-mode session
// (the runner's own SDK and sandbox hook) and returns the final result
// text, and the workspace directory.
func defaultModeBash(t *testing.T, tr *testRunner, opts map[string]any, command string) (string, string) {
	t.Helper()
	id := newWorkspaceID("atk")
	if opts == nil {
		opts = map[string]any{"allowed_tools": []string{"Bash"}}
	}
	opts["model"] = "claude-sonnet-4-5"
	c, _ := seedSession(t, tr, id, opts)
	res, _ := c.turn("q1", bashPrompt(command))
	c.stop()
	text, _ := res["result"].(string)
	return text, tr.WorkspaceDir(id)
}

// relayOpts are SDK options for a relay session on tr in a fresh
// workspace, Bash allowed.
func relayOpts(tr *testRunner) (claude.Options, string) {
	id := newWorkspaceID("atk")
	return claude.Options{
		Model: "claude-sonnet-4-5", ControlTimeout: 30 * time.Second, AllowedTools: []string{"Bash"},
		Runner: &claude.RunnerOptions{URL: tr.URL, Token: tr.Token, WorkspaceID: id},
	}, tr.WorkspaceDir(id)
}

func relayBash(t *testing.T, opts claude.Options, command string) string {
	t.Helper()
	res, err := claude.FinalResult(claude.Query(testCtx(t), bashPrompt(command), opts))
	if err != nil {
		t.Fatal(err)
	}
	return res.Result
}

// hostHooks are hooks a host may register on Bash next to the runner's.
var hostHooks = map[string]func(cmd string) claude.HookFunc{
	// observe: returns nothing.
	"observe": func(string) claude.HookFunc {
		return func(context.Context, claude.HookInput) (claude.HookOutput, error) { return claude.HookOutput{}, nil }
	},
	// approve: allows the call without changing it.
	"approve": func(string) claude.HookFunc {
		return func(context.Context, claude.HookInput) (claude.HookOutput, error) {
			return claude.HookOutput{HookSpecificOutput: &claude.HookSpecific{
				HookEventName: cc.HookPreToolUse, PermissionDecision: "allow", PermissionDecisionReason: "host says yes"}}, nil
		}
	},
	// rewrite: replaces the command (with the same one, freshly encoded).
	"rewrite": func(cmd string) claude.HookFunc {
		return func(context.Context, claude.HookInput) (claude.HookOutput, error) {
			in, _ := json.Marshal(map[string]string{"command": cmd})
			return claude.RewriteToolInput(in, "host rewrite"), nil
		}
	},
}

// bashVariants run a command every way a host can reach Bash on a
// sandboxed runner; each returns the final result text.
func bashVariants(tr *testRunner) map[string]func(t *testing.T, cmd string) string {
	v := map[string]func(t *testing.T, cmd string) string{
		"default": func(t *testing.T, cmd string) string {
			text, _ := defaultModeBash(t, tr, nil, cmd)
			return text
		},
		"relay": func(t *testing.T, cmd string) string {
			opts, _ := relayOpts(tr)
			return relayBash(t, opts, cmd)
		},
		// Bash not allowed up front: the host's can_use_tool allows it
		// (claude.Allow echoes the input the CLI sent).
		"relay-canusetool-allow": func(t *testing.T, cmd string) string {
			opts, _ := relayOpts(tr)
			opts.AllowedTools = nil
			opts.CanUseTool = func(context.Context, claude.PermissionRequest) (claude.PermissionResult, error) {
				return claude.Allow{}, nil
			}
			return relayBash(t, opts, cmd)
		},
		// The same, but the host's answer carries its own input.
		"relay-canusetool-rewrite": func(t *testing.T, cmd string) string {
			opts, _ := relayOpts(tr)
			opts.AllowedTools = nil
			opts.CanUseTool = func(context.Context, claude.PermissionRequest) (claude.PermissionResult, error) {
				in, _ := json.Marshal(map[string]string{"command": cmd})
				return claude.Allow{UpdatedInput: in}, nil
			}
			return relayBash(t, opts, cmd)
		},
	}
	for name, hook := range hostHooks {
		v["relay-hook-"+name] = func(t *testing.T, cmd string) string {
			opts, _ := relayOpts(tr)
			opts.Hooks = map[string][]claude.HookMatcher{cc.HookPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{hook(cmd)}}}}
			return relayBash(t, opts, cmd)
		}
	}
	return v
}

var variantOrder = []string{"default", "relay", "relay-hook-observe", "relay-hook-approve", "relay-hook-rewrite", "relay-canusetool-allow", "relay-canusetool-rewrite"}

// Sandbox escapes through a sandboxed runner, with the real CLI: every way
// a host reaches Bash, default and relay mode, with and without the host's
// own hooks.
func TestRealCLIRunnerSandboxEscapes(t *testing.T) {
	timed(t)
	tr := startRunner(t, true)

	// A sibling workspace with a secret, made through another session.
	victim := newWorkspaceID("victim")
	victimDir := tr.WorkspaceDir(victim)
	t.Run("SetupVictim", func(t *testing.T) {
		timed(t)
		c, _ := seedSession(t, tr, victim, map[string]any{"model": "claude-sonnet-4-5", "allowed_tools": []string{"Bash"}})
		res, _ := c.turn("q1", bashPrompt("echo top-secret > secret.txt && cat secret.txt"))
		c.stop()
		if res["result"] != "tool said: top-secret" || !exists(filepath.Join(victimDir, "secret.txt")) {
			t.Fatalf("victim setup: %v", res["result"])
		}
	})
	if t.Failed() {
		return
	}

	variants := bashVariants(tr)
	l := listen(t)
	for _, name := range variantOrder {
		run := variants[name]
		t.Run(name, func(t *testing.T) {
			t.Run("WriteOutside", func(t *testing.T) {
				timed(t)
				targets := []string{"/etc/tether-e2e-escape", "/usr/tether-e2e-escape",
					filepath.Join(filepath.Dir(tr.Root), "escape"), // the runner's base dir under /var/tmp
					filepath.Join(tr.Root, "escape"), filepath.Join(tr.Data, "escape"),
					filepath.Join(victimDir, "escape"), filepath.Join(tr.HomeDir(victim), "escape")}
				cmd := "for p in " + strings.Join(targets, " ") + "; do if touch $p 2>/dev/null; then echo WROTE; else echo denied; fi; done"
				got := run(t, cmd)
				if want := "tool said: " + strings.Repeat("denied\n", len(targets)-1) + "denied"; got != want {
					t.Errorf("result %q", got)
				}
				for _, p := range targets {
					if exists(p) {
						t.Errorf("%s exists on the host", p)
					}
				}
			})
			t.Run("ReadOtherWorkspace", func(t *testing.T) {
				timed(t)
				got := run(t, "cat "+filepath.Join(victimDir, "secret.txt")+" 2>&1; echo LISTING; ls -A "+tr.Root+" "+filepath.Join(tr.Data, "homes")+" | tr '\\n' ' '")
				catOut, listing, _ := strings.Cut(got, "LISTING")
				if strings.Contains(got, "top-secret") || !strings.Contains(catOut, "No such file or directory") ||
					strings.Contains(listing, victim) || !strings.Contains(listing, "atk-") {
					t.Errorf("result %q", got)
				}
			})
			t.Run("Network", func(t *testing.T) {
				timed(t)
				before := l.accepted.Load()
				got := run(t, l.connectScript())
				if l.accepted.Load() != before || !strings.HasSuffix(got, "refused") {
					t.Errorf("result %q, listener accepted %d new connections", got, l.accepted.Load()-before)
				}
			})
		})
	}

	// Control: without the sandbox the same command does connect, so the
	// refusals above are the sandbox's doing.
	t.Run("ControlNoSandbox", func(t *testing.T) {
		timed(t)
		open := startRunner(t, false)
		before := l.accepted.Load()
		got, _ := defaultModeBash(t, open, nil, l.connectScript())
		if got != "tool said: connected: hello from the host" || l.accepted.Load() != before+1 {
			t.Fatalf("result %q, accepted %d", got, l.accepted.Load()-before)
		}
	})
}

// The runner's sandbox hook rewrites Bash but must not approve it: a
// session whose permissions would refuse Bash still refuses it.
func TestRealCLIRunnerSandboxHookDoesNotApprove(t *testing.T) {
	timed(t)
	tr := startRunner(t, true)
	const cmd = "touch marker.txt; echo ran"

	t.Run("DefaultModeNoAllowedTools", func(t *testing.T) {
		timed(t)
		got, dir := defaultModeBash(t, tr, map[string]any{"permission_mode": "default"}, cmd)
		if exists(filepath.Join(dir, "marker.txt")) || strings.Contains(got, "tool said: ran") {
			t.Fatalf("Bash ran without permission: %q", got)
		}
	})
	t.Run("RelayNoCanUseTool", func(t *testing.T) {
		timed(t)
		opts, dir := relayOpts(tr)
		opts.AllowedTools, opts.PermissionMode = nil, claude.PermissionDefault
		got := relayBash(t, opts, cmd)
		if exists(filepath.Join(dir, "marker.txt")) || strings.Contains(got, "tool said: ran") {
			t.Fatalf("Bash ran without permission: %q", got)
		}
	})
	t.Run("RelayCanUseToolDenies", func(t *testing.T) {
		timed(t)
		opts, dir := relayOpts(tr)
		opts.AllowedTools, opts.PermissionMode = nil, claude.PermissionDefault
		var mu sync.Mutex
		var asked []string
		opts.CanUseTool = func(_ context.Context, r claude.PermissionRequest) (claude.PermissionResult, error) {
			mu.Lock()
			asked = append(asked, r.ToolName+" "+string(r.Input))
			mu.Unlock()
			return claude.Deny{Message: "host says no"}, nil
		}
		got := relayBash(t, opts, cmd)
		mu.Lock()
		defer mu.Unlock()
		if len(asked) != 1 || !strings.HasPrefix(asked[0], "Bash ") || exists(filepath.Join(dir, "marker.txt")) {
			t.Fatalf("asked %v, result %q", asked, got)
		}
		t.Logf("can_use_tool saw: %s", asked[0])
	})
	t.Run("RelayHostHookObserves", func(t *testing.T) {
		// A host hook that says nothing must not turn the runner's
		// rewrite into an approval either.
		timed(t)
		opts, dir := relayOpts(tr)
		opts.AllowedTools, opts.PermissionMode = nil, claude.PermissionDefault
		opts.Hooks = map[string][]claude.HookMatcher{cc.HookPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{hostHooks["observe"]("")}}}}
		got := relayBash(t, opts, cmd)
		if exists(filepath.Join(dir, "marker.txt")) || strings.Contains(got, "tool said: ran") {
			t.Fatalf("Bash ran without permission: %q", got)
		}
	})
}
