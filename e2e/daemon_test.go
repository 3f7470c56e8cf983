package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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

// daemonAgent is one real agent CLI against its fake model API, as tether
// daemon is given it.
type daemonAgent struct {
	kind string
	wire string // its name on Mast's wire
	cli  string
	// env is what the daemon's environment needs for the agent (NAME=value);
	// pass are the names of those handed to the agent as they are.
	env      []string
	pass     []string
	requests func() []fakehttp.Request
	// shell is a prompt whose answer is a shell command touching
	// ran-through-daemon.txt.
	shell string
}

func newDaemonAgent(t *testing.T, kind string) *daemonAgent {
	t.Helper()
	clearAgentEnv(t)
	a := &daemonAgent{kind: kind, wire: kind, shell: "USE_SHELL touch ran-through-daemon.txt"}
	switch kind {
	case "claude":
		a.cli, a.wire = testenv.RequireClaudeCLI(t), "claude-code"
		fake, err := fakeanthropic.Start(fakeanthropic.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fake.Close() })
		a.requests = fake.Requests
		for _, kv := range testenv.ClaudeEnv("/nonexistent", fake.URL()) {
			if k, _, _ := strings.Cut(kv, "="); k != "HOME" {
				a.env = append(a.env, kv)
			}
		}
		a.shell = bashPrompt("touch ran-through-daemon.txt")
	default:
		a.cli = map[string]func(testing.TB) string{"codex": testenv.RequireCodexCLI, "opencode": testenv.RequireOpenCodeCLI}[kind](t)
		fake, err := fakeopenai.Start(fakeopenai.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fake.Close() })
		a.requests = fake.Requests
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
			k, _, _ := strings.Cut(kv, "=")
			switch {
			case k == "CODEX_HOME" || k == "XDG_CONFIG_HOME" || k == "OPENAI_API_KEY" || strings.HasPrefix(k, "OPENCODE_"):
				a.env = append(a.env, kv)
			case k == "npm_config_registry": // keeps OpenCode's plugin fetch on loopback
				a.env = append(a.env, kv)
				a.pass = append(a.pass, k)
			}
		}
	}
	return a
}

// daemonData is a data directory for a daemon, not under the temporary
// directory: the sandbox mounts its own, which would hide the daemon's
// directories whether or not it means to.
func daemonData(t *testing.T) string {
	t.Helper()
	data, err := os.MkdirTemp("/var/tmp", "tether-e2e-daemon-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(data) })
	if data, err = filepath.EvalSymlinks(data); err != nil {
		t.Fatal(err)
	}
	return data
}

// daemonJourney drives one real agent CLI (against a fake model API)
// through `tether daemon` from an orchestrator that caches as the seed's
// does: a session, one prompt from the phone whose shell command asks
// permission, approved from the orchestrator, run for real in the
// session's workspace, and its events, messages and diff as the
// orchestrator sees them; the phone's cache has the prompt once; an abort
// with no turn running is done.
func daemonJourney(t *testing.T, kind string, sandboxed bool) {
	timed(t)
	a := newDaemonAgent(t, kind)
	for _, kv := range a.env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cli, wire, prompt, pass, requests := a.cli, a.wire, a.shell, a.pass, a.requests

	o, err := fakeorchestrator.Start(fakeorchestrator.Options{Store: true, Bursts: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	data := daemonData(t)
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
	if res, err := o.Prompt(wait, s.ID, prompt); err != nil || res.Status != "ok" {
		t.Fatalf("the phone's prompt: %+v %v", res, err)
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
	checkCachedPrompts(t, o, s.ID, prompt)
	if res, err := o.Command(wait, map[string]any{"type": "abort_session", "sessionId": s.ID}); err != nil || res.Status != "ok" {
		t.Fatalf("abort_session with no turn running: %+v %v", res, err)
	}
}

// checkCachedPrompts holds the orchestrator's cache of a session to its
// prompts: each exactly once, with its text, completed.
func checkCachedPrompts(t *testing.T, o *fakeorchestrator.Server, sessionID string, prompts ...string) {
	t.Helper()
	o.Read(func(v fakeorchestrator.View) {
		var cached []string
		for _, m := range v.Messages(sessionID) {
			if m.Role != "user" {
				continue
			}
			var text []string
			for _, p := range m.Parts {
				part, _ := p.(map[string]any)
				for _, key := range []string{"text", "content"} { // the phone's part, or the daemon's
					if s, ok := part[key].(string); ok && s != "" {
						text = append(text, s)
					}
				}
			}
			cached = append(cached, strings.Join(text, "\n"))
			if len(text) == 0 || !m.Completed {
				t.Errorf("cached prompt %s: %+v", m.ID, m)
			}
		}
		slices.Sort(cached)
		if want := slices.Sorted(slices.Values(prompts)); !slices.Equal(cached, want) {
			t.Errorf("the cache's prompts %q, want each of %q once", cached, want)
		}
	})
}

func TestRealCLIClaudeDaemonRestart(t *testing.T)   { daemonRestart(t, "claude") }
func TestRealCLICodexDaemonRestart(t *testing.T)    { daemonRestart(t, "codex") }
func TestRealCLIOpenCodeDaemonRestart(t *testing.T) { daemonRestart(t, "opencode") }

// daemonChild is a `tether daemon` process.
type daemonChild struct {
	cmd    *exec.Cmd
	log    *testenv.SyncBuffer
	exited chan error
}

// startTetherDaemon starts `tether daemon` on data with the orchestrator's
// development key and the agent's CLI (the sandbox on, its default); the
// test's end stops it.
func startTetherDaemon(t *testing.T, tether, data string, o *fakeorchestrator.Server, a *daemonAgent) *daemonChild {
	t.Helper()
	args := []string{"daemon", "--orchestrator", o.URL(), "--device-key", fakeorchestrator.DevKey, "--data", data,
		"--cli", a.kind + "=" + a.cli, "--log-level", "debug"}
	if len(a.pass) > 0 {
		args = append(args, "--agent-env", strings.Join(a.pass, ","))
	}
	cmd := exec.Command(tether, args...)
	cmd.Env = append(os.Environ(), a.env...)
	d := &daemonChild{cmd: cmd, log: &testenv.SyncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = d.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		d.stop(t)
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.log.String())
		}
	})
	return d
}

// stop ends the daemon with SIGTERM (killing it after 30 s) and waits; a
// daemon that does not exit cleanly fails the test.
func (d *daemonChild) stop(t *testing.T) {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		d.exited <- nil // stopped: a second stop has nothing to wait for
		if err != nil {
			t.Errorf("tether daemon after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
		d.exited <- nil
		t.Errorf("tether daemon did not stop within 30 s of SIGTERM")
	}
}

// turnsEnded counts the session's turns whose end reached the
// orchestrator, and says how the last ended.
func turnsEnded(v fakeorchestrator.View, sessionID string) (n int, last map[string]any) {
	for _, f := range v.Events() {
		ev := f["event"].(map[string]any)
		if ev["sessionId"] != sessionID || ev["type"] != "mast.session.updated" {
			continue
		}
		if turn, ok := ev["data"].(map[string]any)["session"].(map[string]any)["turn"].(map[string]any); ok {
			n, last = n+1, turn
		}
	}
	return n, last
}

// daemonRestart: the real `tether daemon` with one real agent CLI (against
// a fake model API) has a session the phone prompted; the daemon stops
// (SIGTERM) and starts again on the same data; the phone's next prompt to
// that session is answered by the agent's own conversation resumed (the
// model is sent the first turn again), under the same session id, its
// seqs going on; the phone's cache ends with each prompt, and each reply,
// once.
func daemonRestart(t *testing.T, kind string) {
	timed(t)
	requireBwrap(t)
	a := newDaemonAgent(t, kind)
	o, err := fakeorchestrator.Start(fakeorchestrator.Options{Store: true, Bursts: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	data, tether := daemonData(t), buildTether(t)
	wait, stop := context.WithTimeout(context.Background(), 4*time.Minute)
	defer stop()
	first := startTetherDaemon(t, tether, data, o, a)
	if err := o.Wait(wait, func(v fakeorchestrator.View) bool { return v.Connected() && len(v.Statuses()) > 0 }); err != nil {
		t.Fatal(err)
	}
	res, err := o.Command(wait, map[string]any{"type": "create_session", "agentType": a.wire})
	if err != nil || res.Status != "ok" {
		t.Fatalf("create_session: %+v %v", res, err)
	}
	var s struct{ ID string }
	_ = json.Unmarshal(res.Data, &s)
	prompts := []string{"the word to remember is pelican", "which word was it"}
	turnDone := func(n int) {
		t.Helper()
		var last map[string]any
		if err := o.Wait(wait, func(v fakeorchestrator.View) bool {
			var got int
			got, last = turnsEnded(v, s.ID)
			return got >= n
		}); err != nil {
			t.Fatalf("turn %d did not end: %v", n, err)
		}
		if last["status"] != "completed" {
			t.Fatalf("turn %d: %v", n, last)
		}
	}
	if res, err := o.Prompt(wait, s.ID, prompts[0]); err != nil || res.Status != "ok" {
		t.Fatalf("the phone's first prompt: %+v %v", res, err)
	}
	turnDone(1)
	var lastSeq float64
	o.Read(func(v fakeorchestrator.View) {
		for _, f := range v.Events() {
			if ev := f["event"].(map[string]any); ev["sessionId"] == s.ID {
				lastSeq = max(lastSeq, ev["data"].(map[string]any)["seq"].(float64))
			}
		}
	})
	first.stop(t)

	startTetherDaemon(t, tether, data, o, a)
	if err := o.Wait(wait, func(v fakeorchestrator.View) bool { return v.Connects() == 2 && v.Connected() }); err != nil {
		t.Fatal(err)
	}
	before := len(a.requests())
	if res, err := o.Prompt(wait, s.ID, prompts[1]); err != nil || res.Status != "ok" {
		t.Fatalf("the phone's prompt after the restart: %+v %v", res, err)
	}
	turnDone(2)

	resumed := false
	for _, r := range a.requests()[before:] {
		body := string(r.Body)
		resumed = resumed || (strings.Contains(body, "pelican") && strings.Contains(body, prompts[1]))
	}
	if !resumed {
		t.Errorf("no model request after the restart has the first turn: the conversation was not resumed")
	}
	o.Read(func(v fakeorchestrator.View) {
		var started map[string]any
		for _, f := range v.Events() {
			ev := f["event"].(map[string]any)
			data := ev["data"].(map[string]any)
			if ev["sessionId"] != s.ID || ev["type"] != "mast.session.updated" {
				continue
			}
			if sess := data["session"].(map[string]any); sess["status"] == "running" && data["seq"].(float64) > lastSeq {
				started = data
			}
		}
		if started == nil {
			t.Errorf("no turn of session %s started after seq %v, the first run's last", s.ID, lastSeq)
		}
		replies := 0
		for _, m := range v.Messages(s.ID) {
			if m.Role == "assistant" && m.Completed && len(m.Parts) > 0 {
				replies++
			}
		}
		if replies < 2 {
			t.Errorf("the cache has %d complete replies, want one per turn: %+v", replies, v.Messages(s.ID))
		}
	})
	checkCachedPrompts(t, o, s.ID, prompts...)
	res, err = o.Command(wait, map[string]any{"type": "list_sessions"})
	if err != nil || res.Status != "ok" || strings.Count(string(res.Data), `"id"`) != 1 || !strings.Contains(string(res.Data), s.ID) {
		t.Fatalf("list_sessions after the resume: %+v %v", res, err)
	}
}
