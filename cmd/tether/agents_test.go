package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/fakeorchestrator"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// binWith is a directory holding only the named programs of this
// machine (links to them): a PATH with no agent CLI on it.
func binWith(t *testing.T, programs ...string) string {
	t.Helper()
	bin := t.TempDir()
	for _, name := range programs {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("no %s: %v", name, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// envWith is cleanEnv with the named variables set to these values
// (NAME=value entries) instead of this process's.
func envWith(set ...string) []string {
	names := map[string]bool{}
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	var env []string
	for _, kv := range cleanEnv() {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// noAgentEnv is an environment in which no agent CLI can be found: PATH
// holds git alone (workspaces use it), and HOME none of the places
// Claude Code installs itself.
func noAgentEnv(t *testing.T, programs ...string) []string {
	return envWith("PATH="+binWith(t, append([]string{"git"}, programs...)...), "HOME="+t.TempDir())
}

// agentsOf is a runner's GET /v1/agents.
func agentsOf(t *testing.T, p *serveProc) (offered map[string]any, unavailable map[string]string) {
	t.Helper()
	var agents struct {
		Agents      map[string]any    `json:"agents"`
		Unavailable map[string]string `json:"unavailable"`
	}
	if code := apiCall(t, p, "GET", "/v1/agents", "", &agents); code != 200 {
		t.Fatalf("GET /v1/agents: %d", code)
	}
	return agents.Agents, agents.Unavailable
}

// apiCall calls a runner's sessions API with testToken.
func apiCall(t *testing.T, p *serveProc, method, path, body string, out any) int {
	t.Helper()
	return runnertest.Call(t, "http://"+p.addr, testToken, method, path, body, out)
}

// turnOf creates a session of kind with prompt and returns what `tether
// attach` shows of it until its turn ends.
func turnOf(t *testing.T, p *serveProc, kind, prompt string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"agent": kind, "workspace_id": kind + "-ws", "prompt": prompt})
	var created struct{ ID string }
	if code := apiCall(t, p, "POST", "/v1/sessions", string(body), &created); code != 201 {
		t.Fatalf("create a %s session: %d\n%s", kind, code, p.log())
	}
	r := tether(t, t.TempDir(), "", cleanEnv(), "attach", created.ID, "--until-turn-end",
		"--runner", "http://"+p.addr, "--runner-token", testToken)
	if r.code != 0 {
		t.Fatalf("attach: %d\n%s%s\nrunner:\n%s", r.code, r.stdout, r.stderr, p.log())
	}
	return r.stdout
}

// A runner with no agent CLI at all starts with the mock, lists every
// other kind as unavailable with the reason and how to give its CLI, and
// says so in its log; a protocol v1 session (Claude Code's) is refused
// with agent_start_failed and the reason.
func TestServeWithoutAnyAgentCLI(t *testing.T) {
	p := startServe(t, noAgentEnv(t))
	offered, unavailable := agentsOf(t, p)
	if !slices.Equal(slices.Sorted(maps.Keys(offered)), []string{"mock"}) {
		t.Fatalf("offered %v, want the mock alone", slices.Sorted(maps.Keys(offered)))
	}
	all := append(slices.Collect(maps.Keys(offered)), slices.Collect(maps.Keys(unavailable))...)
	if !slices.Equal(slices.Sorted(slices.Values(all)), slices.Sorted(slices.Values(driver.Names()))) {
		t.Fatalf("the runner knows %v, the registry %v", all, driver.Names())
	}
	for kind, why := range unavailable {
		if !strings.Contains(why, "CLI not found") || !strings.Contains(why, "--cli "+kind+"=PATH") {
			t.Errorf("%s unavailable: %q", kind, why)
		}
	}
	log := p.log()
	if !strings.Contains(log, `msg="agents offered" agents=[mock]`) {
		t.Errorf("the log does not say which agents are offered:\n%s", log)
	}
	for kind := range unavailable {
		if !strings.Contains(log, `msg="agent not offered" agent=`+kind+` reason=`) {
			t.Errorf("the log does not say why %s is not offered:\n%s", kind, log)
		}
	}
	if out := turnOf(t, p, "mock", "hello"); !strings.Contains(out, "✓ completed") {
		t.Fatalf("the mock's turn:\n%s", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/sessions", bearer())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	wsSend(t, ws, map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "v1"})
	f := wsNext(t, ws)
	if details, _ := f["details"].(string); f["type"] != "error" || f["code"] != "agent_start_failed" ||
		!strings.Contains(details, "claude is not available") || !strings.Contains(details, "--cli claude=PATH") {
		t.Fatalf("a v1 init without Claude Code: %v", f)
	}
}

// A runner on a machine with Codex alone (given with --cli; neither
// claude nor opencode is there) starts, serves a Codex session through
// the sessions API, and lists Claude Code and OpenCode as unavailable.
func TestRealCLIServeWithOnlyCodex(t *testing.T) {
	codex := testenv.RequireCodexCLI(t)
	fake, err := fakeopenai.Start(fakeopenai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	opHome := t.TempDir() // the operator's: Codex's config.toml points at the fake API
	if _, err := testenv.CodexEnv(opHome, fake.URL()); err != nil {
		t.Fatal(err)
	}
	env := envWith("PATH="+binWith(t, "git", "node"), "HOME="+opHome,
		"CODEX_HOME="+filepath.Join(opHome, ".codex"), "OPENAI_API_KEY=sk-fake")
	p := startServe(t, env, "--cli", "codex="+codex)
	offered, unavailable := agentsOf(t, p)
	if !slices.Equal(slices.Sorted(maps.Keys(offered)), []string{"codex", "mock"}) {
		t.Fatalf("offered %v\n%s", slices.Sorted(maps.Keys(offered)), p.log())
	}
	if why := unavailable["claude"]; !strings.Contains(why, "claude: CLI not found") || unavailable["opencode"] == "" {
		t.Fatalf("unavailable %v", unavailable)
	}
	if out := turnOf(t, p, "codex", "SAY hello from codex"); !strings.Contains(out, "hello from codex") || !strings.Contains(out, "✓ completed") {
		t.Fatalf("codex's turn:\n%s\nrunner:\n%s", out, p.log())
	}
	// Stopped as an operator stops it, the runner ends Codex and waits for
	// it; killed, it would leave Codex writing its home while the test's
	// directories are removed.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(waitLimit); code != 0 {
		t.Fatalf("tether serve exited %d after SIGTERM:\n%s", code, p.log())
	}
}

// tether run, shim and daemon offer the registry's kinds, all of them
// and nothing else (serve: TestServeWithoutAnyAgentCLI).
func TestEveryKindIsOffered(t *testing.T) {
	names := strings.Join(driver.Names(), ", ")
	r := tether(t, t.TempDir(), "", cleanEnv(), "run", "--agent", "nope", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "is not one of "+names+"\n") {
		t.Errorf("run --agent nope: %d %s", r.code, r.stderr)
	}
	r = tether(t, t.TempDir(), "", cleanEnv(), "shim", "--agent", "nope", "--port", "0", "--workspace", t.TempDir())
	if r.code != 2 || !strings.Contains(r.stderr, `no agent "nope" (`+names+")") {
		t.Errorf("shim --agent nope: %d %s", r.code, r.stderr)
	}
	for _, kind := range driver.Names() {
		r = tether(t, t.TempDir(), "", cleanEnv(), "run", "--agent", kind, "--json", "--approve", "bogus", "hi")
		if r.code != 2 || strings.Contains(r.stderr, "is not one of") || !strings.Contains(r.stderr, "bogus") {
			t.Errorf("run --agent %s was refused: %d %s", kind, r.code, r.stderr)
		}
	}

	o, err := fakeorchestrator.Start(fakeorchestrator.Options{NoDevKey: true, Keys: []string{"dk_every-kind"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	daemon := exec.Command(tetherPath(), "daemon", "--orchestrator", o.URL(), "--data", t.TempDir(), "--sandbox", "off")
	daemon.Env = append(noAgentEnv(t), "TETHER_DEVICE_KEY=dk_every-kind")
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = daemon.Process.Kill(); _ = daemon.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := o.Wait(ctx, func(v fakeorchestrator.View) bool { return len(v.Statuses()) > 0 }); err != nil {
		t.Fatal("no status from the daemon: ", err)
	}
	o.Read(func(v fakeorchestrator.View) {
		var types []string
		for _, a := range v.Statuses()[0]["agents"].([]any) {
			types = append(types, a.(map[string]any)["type"].(string))
		}
		var want []string
		for _, k := range driver.Kinds() {
			want = append(want, k.MastName())
		}
		if !slices.Equal(slices.Sorted(slices.Values(types)), slices.Sorted(slices.Values(want))) {
			t.Errorf("the daemon reports %v, the registry has %v", types, want)
		}
	})
}
