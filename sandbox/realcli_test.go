package sandbox_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/testenv"
	cc "github.com/tetherhq/tether/protocol/claudecode"
	"github.com/tetherhq/tether/sandbox"
	"github.com/tetherhq/tether/transport"
)

// sandboxedCLI runs the real claude CLI under the policy, the way the
// runner does: argv and environment from claude.Options, wrapped by Wrap,
// started by a transport.Command.
type sandboxedCLI struct {
	t      *testing.T
	cli    string
	srv    *fakeanthropic.Server
	f      *fixture
	policy sandbox.Policy
	hooks  map[string][]claude.HookMatcher

	mu     sync.Mutex
	stderr []string
}

// bashPrompt makes the fake model call Bash with command.
func bashPrompt(command string) string {
	input, _ := json.Marshal(map[string]string{"command": command})
	return "USE_TOOL Bash " + string(input)
}

func (s *sandboxedCLI) query(prompt string) *claude.ResultMessage {
	t := s.t
	t.Helper()
	env := map[string]string{}
	for _, kv := range testenv.ClaudeEnv(s.f.home, s.srv.URL()) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	opts := claude.Options{
		Cwd: s.f.ws, Env: env, ReplaceEnv: true,
		Model: "claude-sonnet-4-5", AllowedTools: []string{"Bash"}, Hooks: s.hooks,
		ControlTimeout: 30 * time.Second,
	}
	args, err := opts.CommandArgs()
	if err != nil {
		t.Fatal(err)
	}
	p := s.policy
	p.Env = map[string]string{}
	for _, kv := range opts.CommandEnv() {
		k, v, _ := strings.Cut(kv, "=")
		p.Env[k] = v
	}
	sc, err := p.Wrap(s.cli, args)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	opts.Transport = &transport.Command{Path: sc.Path, Args: sc.Args, Env: sc.Env, ExtraFiles: sc.Files, Dir: s.f.ws,
		Stderr: func(line string) {
			s.mu.Lock()
			s.stderr = append(s.stderr, line)
			s.mu.Unlock()
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := claude.FinalResult(claude.Query(ctx, prompt, opts))
	if err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Fatalf("%v\nCLI stderr:\n%s", err, strings.Join(s.stderr, "\n"))
	}
	return res
}

func TestRealCLISandbox(t *testing.T) {
	cli := testenv.RequireClaudeCLI(t)
	requireBwrap(t)
	srv, err := fakeanthropic.Start(fakeanthropic.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	newRun := func(t *testing.T) *sandboxedCLI {
		f := newFixture(t)
		p := f.policy()
		// The CLI may live under /tmp (a checkout there), which the sandbox
		// replaces with its own: keep its npm tree visible.
		p.ReadOnly = append(p.ReadOnly, npmTree(t, cli))
		p.Network = true         // the CLI must reach the fake model on 127.0.0.1
		p.NestedSandboxes = true // its Bash commands run in nested sandboxes
		return &sandboxedCLI{t: t, cli: cli, srv: srv, f: f, policy: p}
	}

	t.Run("WritesWorkspace", func(t *testing.T) {
		s := newRun(t)
		// An id with no /etc/passwd entry (CI machines may have no uid
		// 1000): the CLI must not depend on one.
		s.policy.UID, s.policy.GID = 54321, 54321
		res := s.query(bashPrompt("echo hi > inside.txt && cat inside.txt"))
		if res.Result != "tool said: hi" {
			t.Fatalf("result %q", res.Result)
		}
		if b, err := os.ReadFile(filepath.Join(s.f.ws, "inside.txt")); err != nil || string(b) != "hi\n" {
			t.Fatalf("inside.txt on the host: %q %v", b, err)
		}
		// The CLI kept its own state in the private home (what --resume
		// needs), not in the workspace.
		if _, err := os.Stat(filepath.Join(s.f.home, ".claude")); err != nil {
			t.Fatalf("no CLI state in the home: %v", err)
		}
	})

	t.Run("CannotWriteOutside", func(t *testing.T) {
		s := newRun(t)
		targets := []string{"/etc/tether-cli-escape", "/usr/tether-cli-escape",
			filepath.Join(s.f.root, "escape"), filepath.Join(s.f.base, "escape")}
		cmd := "for p in " + strings.Join(targets, " ") + "; do if touch $p 2>/dev/null; then echo WROTE; else echo denied; fi; done"
		res := s.query(bashPrompt(cmd))
		if res.Result != "tool said: denied\ndenied\ndenied\ndenied" {
			t.Fatalf("result %q", res.Result)
		}
		for _, p := range targets {
			if exists(p) {
				t.Errorf("%s exists on the host", p)
			}
		}
	})

	t.Run("CannotReadOtherWorkspace", func(t *testing.T) {
		s := newRun(t)
		res := s.query(bashPrompt("cat " + filepath.Join(s.f.other, "secret.txt") + " 2>&1; ls -A " + s.f.root))
		if strings.Contains(res.Result, "other workspace") || !strings.Contains(res.Result, "No such file or directory") ||
			!strings.HasSuffix(res.Result, "\na") {
			t.Fatalf("result %q", res.Result)
		}
	})

	t.Run("BashHasNoNetwork", func(t *testing.T) {
		s := newRun(t)
		l := listen(t)
		var rewrites atomic.Int32
		s.hooks = map[string][]claude.HookMatcher{cc.HookPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
			func(_ context.Context, in claude.HookInput) (claude.HookOutput, error) {
				var input map[string]any
				if err := json.Unmarshal(in.ToolInput, &input); err != nil {
					return claude.DenyTool("unreadable Bash input"), nil
				}
				cmd, _ := input["command"].(string)
				input["command"] = sandbox.BashCommand(s.policy, cmd)
				out, _ := json.Marshal(input)
				rewrites.Add(1)
				return claude.RewriteToolInput(out, "no network for tools"), nil
			}}}}}
		res := s.query(bashPrompt(connect(l) + "; echo still-writes > net.txt"))
		// The tool's output is stdout and stderr: bash's own complaint, then
		// ours.
		if rewrites.Load() != 1 || !strings.HasSuffix(res.Result, "Connection refused\nrefused") || l.accepted.Load() != 0 {
			t.Fatalf("rewrites %d, result %q, listener accepted %d", rewrites.Load(), res.Result, l.accepted.Load())
		}
		if !exists(filepath.Join(s.f.ws, "net.txt")) {
			t.Fatal("the rewritten command could not write the workspace")
		}
		// Control: the same command without the hook does connect, so the
		// refusal above is the nested sandbox's doing.
		s.hooks = nil
		res = s.query(bashPrompt(connect(l)))
		if res.Result != "tool said: connected: hello from the host" || l.accepted.Load() != 1 {
			t.Fatalf("control: result %q, listener accepted %d", res.Result, l.accepted.Load())
		}
	})
}

// npmTree is the node_modules directory the CLI was installed in.
func npmTree(t *testing.T, cli string) string {
	t.Helper()
	for d := filepath.Dir(cli); d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			return d
		}
	}
	return filepath.Dir(cli)
}
