package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/daemon"
	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/fakeorchestrator"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/server"
)

func TestRealCLIClaudeDaemon(t *testing.T)   { daemonJourneys(t, "claude") }
func TestRealCLICodexDaemon(t *testing.T)    { daemonJourneys(t, "codex") }
func TestRealCLIOpenCodeDaemon(t *testing.T) { daemonJourneys(t, "opencode") }

// daemonJourneys runs the journey with the sandbox on (tether daemon's
// default) and off.
func daemonJourneys(t *testing.T, kind string) {
	for _, sandboxed := range []bool{true, false} {
		t.Run(map[bool]string{true: "Sandbox", false: "NoSandbox"}[sandboxed], func(t *testing.T) {
			if sandboxed {
				requireBwrap(t)
			}
			daemonJourney(t, kind, sandboxed)
		})
	}
}

// daemonJourney drives one real agent CLI (against a fake model API)
// through `tether daemon` from an orchestrator: a session, one prompt
// whose shell command asks permission, approved from the orchestrator,
// run for real in the session's workspace, and its events, messages and
// diff as the orchestrator sees them.
func daemonJourney(t *testing.T, kind string, sandboxed bool) {
	timed(t)
	var cli string
	var requests func() []fakehttp.Request
	prompt := "USE_SHELL touch ran-through-daemon.txt"
	clearAgentEnv(t)
	var pass []string
	switch kind {
	case "claude":
		cli = testenv.RequireClaudeCLI(t)
		fake, err := fakeanthropic.Start(fakeanthropic.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fake.Close() })
		requests = fake.Requests
		for _, kv := range testenv.ClaudeEnv("/nonexistent", fake.URL()) {
			if k, v, _ := strings.Cut(kv, "="); k != "HOME" {
				t.Setenv(k, v)
			}
		}
		prompt = bashPrompt("touch ran-through-daemon.txt")
	default:
		cli = map[string]func(testing.TB) string{"codex": testenv.RequireCodexCLI, "opencode": testenv.RequireOpenCodeCLI}[kind](t)
		fake, err := fakeopenai.Start(fakeopenai.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fake.Close() })
		requests = fake.Requests
		var env []string
		if kind == "codex" {
			env, err = testenv.CodexEnv(t.TempDir(), fake.URL())
		} else {
			env, err = testenv.OpenCodeEnv(t.TempDir(), fake.URL(), false)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			switch {
			case k == "CODEX_HOME" || k == "XDG_CONFIG_HOME" || k == "OPENAI_API_KEY" || strings.HasPrefix(k, "OPENCODE_"):
				t.Setenv(k, v)
			case k == "npm_config_registry": // keeps OpenCode's plugin fetch on loopback
				t.Setenv(k, v)
				pass = append(pass, k)
			}
		}
	}

	o, err := fakeorchestrator.Start(fakeorchestrator.Options{Store: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	// Not under the temporary directory: the sandbox mounts its own, which
	// would hide the daemon's directories whether or not it means to.
	data, err := os.MkdirTemp("/var/tmp", "tether-e2e-daemon-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(data) })
	if data, err = filepath.EvalSymlinks(data); err != nil {
		t.Fatal(err)
	}
	logs := &testenv.SyncBuffer{}
	agents := server.Config{AgentEnv: pass, InitializeTimeout: 60 * time.Second, TurnTimeout: 5 * time.Minute, Sandbox: sandboxed}
	if kind == "claude" {
		agents.CLIPath = cli
	} else {
		agents.CLIs = map[string]string{kind: cli}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Config{Orchestrator: o.URL(), DeviceKey: fakeorchestrator.DevKey, DataDir: data,
			Agents: agents, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s", logs.String())
		}
	})
	wait, stop := context.WithTimeout(context.Background(), 3*time.Minute)
	defer stop()
	if err := o.Wait(wait, func(v fakeorchestrator.View) bool { return v.Connected() && len(v.Statuses()) > 0 }); err != nil {
		t.Fatal(err)
	}
	wire := map[string]string{"claude": "claude-code"}[kind]
	if wire == "" {
		wire = kind
	}
	o.Read(func(v fakeorchestrator.View) {
		for _, a := range v.Statuses()[0]["agents"].([]any) {
			if a := a.(map[string]any); a["type"] == wire && a["ready"] != true {
				t.Errorf("%s reported not ready: %v", wire, a)
			}
		}
	})

	res, err := o.Command(wait, map[string]any{"type": "create_session", "agentType": wire})
	if err != nil || res.Status != "ok" {
		t.Fatalf("create_session: %+v %v", res, err)
	}
	var s struct{ ID, AgentType string }
	_ = json.Unmarshal(res.Data, &s)
	if s.AgentType != wire {
		t.Fatalf("session %+v, want agent %s", s, wire)
	}
	if res, err := o.Command(wait, map[string]any{"type": "send_prompt", "sessionId": s.ID, "text": prompt}); err != nil || res.Status != "ok" {
		t.Fatalf("send_prompt: %+v %v", res, err)
	}
	var perm map[string]any
	if err := o.Wait(wait, func(v fakeorchestrator.View) bool {
		for _, f := range v.Events() {
			ev := f["event"].(map[string]any)
			if ev["sessionId"] == s.ID && ev["type"] == "mast.permission.created" {
				perm = ev["data"].(map[string]any)["permission"].(map[string]any)
			}
		}
		return perm != nil
	}); err != nil {
		t.Fatal("no permission asked: ", err)
	}
	if in, _ := json.Marshal(perm["input"]); !strings.Contains(string(in), "ran-through-daemon.txt") || perm["status"] != "pending" {
		t.Fatalf("permission %v", perm)
	}
	if res, err := o.Command(wait, map[string]any{"type": "approve_permission", "sessionId": s.ID, "permissionId": perm["id"]}); err != nil || res.Status != "ok" {
		t.Fatalf("approve_permission: %+v %v", res, err)
	}
	var turn map[string]any
	if err := o.Wait(wait, func(v fakeorchestrator.View) bool {
		for _, f := range v.Events() {
			ev := f["event"].(map[string]any)
			if ev["sessionId"] != s.ID || ev["type"] != "mast.session.updated" {
				continue
			}
			if t, ok := ev["data"].(map[string]any)["session"].(map[string]any)["turn"].(map[string]any); ok {
				turn = t
			}
		}
		return turn != nil
	}); err != nil {
		t.Fatal("the turn did not end: ", err)
	}
	if turn["status"] != "completed" {
		t.Fatalf("turn %v", turn)
	}
	ran, _ := filepath.Glob(filepath.Join(data, "workspaces", "*", "ran-through-daemon.txt"))
	if len(ran) != 1 {
		t.Fatal("the approved command did not run in the session's workspace")
	}
	o.Read(func(v fakeorchestrator.View) {
		var approved, ranPart bool
		for _, f := range v.Events() {
			ev := f["event"].(map[string]any)
			d := ev["data"].(map[string]any)
			if ev["type"] == "mast.permission.updated" && d["permissionId"] == perm["id"] && d["status"] == "approved" {
				approved = true
			}
			if p, ok := d["part"].(map[string]any); ok && p["type"] == "tool-invocation" && p["status"] == "completed" {
				in, _ := json.Marshal(p["input"])
				ranPart = ranPart || strings.Contains(string(in), "ran-through-daemon.txt")
			}
		}
		if !approved || !ranPart {
			t.Errorf("events: permission approved %v, tool part completed %v", approved, ranPart)
		}
	})
	res, err = o.Command(wait, map[string]any{"type": "get_diff", "sessionId": s.ID})
	if err != nil || res.Status != "ok" || !strings.Contains(string(res.Data), "ran-through-daemon.txt") {
		t.Fatalf("get_diff: %+v %v", res, err)
	}
	res, err = o.Command(wait, map[string]any{"type": "get_messages", "sessionId": s.ID})
	if err != nil || res.Status != "ok" || !strings.Contains(string(res.Data), `"role":"assistant"`) {
		t.Fatalf("get_messages: %+v %v", res, err)
	}
	if len(requests()) == 0 {
		t.Fatal("the model API saw no request")
	}
	if sandboxed { // the key stayed with the daemon, behind its proxy
		assertNoKeyIn(t, filepath.Join(data, "homes"), "sk-fake")
	}
}
