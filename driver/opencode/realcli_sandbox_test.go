package opencode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/sandbox"
)

// sandboxedEnv is the real CLI under bubblewrap, laid out as a runner
// has it: the session's workspace and another one under a workspaces
// root, the session's home under a homes root, the runner's data, all
// three roots hidden; the provider's configuration handed over as a home
// file, written into the session's (empty) home, whose HOME and XDG
// directories replace those of Env. tune adjusts the runner's policy.
type sandboxedEnv struct {
	*realEnv
	other string
}

func newSandboxedEnv(t *testing.T, tune func(*sandbox.Policy)) *sandboxedEnv {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skipf("bubblewrap is not installed: %v", err)
	}
	// Not under /tmp: the sandbox has a /tmp of its own.
	base, err := os.MkdirTemp("/var/tmp", "tether-opencode-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	root, homes, data := filepath.Join(base, "workspaces"), filepath.Join(base, "homes"), filepath.Join(base, "data")
	ws, home, other := filepath.Join(root, "a"), filepath.Join(homes, "a"), filepath.Join(root, "b")
	for _, d := range []string{ws, home, other, data} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(other, "secret"), []byte("no"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := newRealEnv(t, nil)
	scratch, err := testenv.OpenCodeEnv(t.TempDir(), env.fake.URL(), false)
	if err != nil {
		t.Fatal(err)
	}
	config, err := testenv.OpenCodeConfig(env.fake.URL(), false)
	if err != nil {
		t.Fatal(err)
	}
	policy := &sandbox.Policy{Hide: []string{root, homes, data}}
	if tune != nil {
		tune(policy)
	}
	d, err := New(driver.Config{CLIPath: env.cfg.CLIPath, Env: scratch, Sandbox: policy,
		HomeFiles: map[string][]byte{testenv.OpenCodeConfigPath: config}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	env.driver, env.home, env.ws = d, home, ws
	return &sandboxedEnv{realEnv: env, other: other}
}

// Under bubblewrap: a text turn and an approved shell command work with
// only the workspace and the home writable, the other workspaces and the
// runner's data hidden, and nothing is left running after Close.
func TestRealCLISandboxed(t *testing.T) {
	env := newSandboxedEnv(t, nil)
	r := env.start(t, agent.StartRequest{})
	r.prompt("SAY boxed")
	if end := r.turnEnd(); end.Turn.Text != "boxed" {
		t.Fatalf("turn %+v %+v", end.Turn, end.Error)
	}
	r.prompt("USE_SHELL ls " + env.other + "; echo inside > probe.txt; cat probe.txt")
	r.allowNext()
	r.turnEnd()
	cmd := find(r.seen, agent.KindItemCompleted, agent.ItemCommand)
	if len(cmd) != 1 || cmd[0].Item.Status != agent.ItemDone || !strings.Contains(cmd[0].Item.Command.Output, "inside") || strings.Contains(cmd[0].Item.Command.Output, "secret") {
		t.Errorf("command %+v", cmd)
	}
	if st, err := os.Stat(filepath.Join(env.home, testenv.OpenCodeConfigPath)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("config in the home: %v, %v", st, err)
	}
	if b, err := os.ReadFile(filepath.Join(env.ws, "probe.txt")); err != nil || string(b) != "inside\n" {
		t.Errorf("probe.txt in the workspace: %q, %v", b, err)
	}
	if err := r.s.Close(); err != nil {
		t.Fatal(err)
	}
	r.rest()
	waitNoProcs(t, "HOME="+env.home)
}

// The commands OpenCode runs have no network, while OpenCode itself
// still reaches its model; the approval and the command's item hold the
// model's own command, never the sandbox's wrapping; its web tool is off;
// and OpenCode's timeout and an interrupt still end a command, with all it
// started.
func TestRealCLISandboxedCommands(t *testing.T) {
	env := newSandboxedEnv(t, nil)
	l := listenLoopback(t)
	r := env.start(t, agent.StartRequest{})

	probe := l.connectScript()
	r.prompt("USE_SHELL " + probe)
	if req := r.allowNext(); req.Title != "bash: "+probe {
		t.Errorf("the approval asks about %q, not the model's command", req.Title)
	}
	end := r.turnEnd()
	cmd := find(r.seen, agent.KindItemCompleted, agent.ItemCommand)
	if len(cmd) != 1 || cmd[0].Item.Command.Command != probe || !strings.HasSuffix(cmd[0].Item.Command.Output, "refused\n") || l.accepted.Load() != 0 {
		t.Fatalf("a command reached a loopback server: %v, %d connections", commands(cmd), l.accepted.Load())
	}
	if end.Turn.Status != agent.TurnCompleted || !strings.Contains(end.Turn.Text, "refused") {
		t.Errorf("the model did not get the command's output: %+v %+v", end.Turn, end.Error)
	}
	for _, e := range r.seen {
		if b, _ := json.Marshal(e); bytes.Contains(b, []byte(sandbox.WrappedMarker)) || bytes.Contains(b, []byte(sandbox.ToolShellPath)) {
			t.Errorf("an event shows the sandbox's wrapping: %s", b)
		}
	}

	// OpenCode's own web tool would fetch with its network: it is off.
	mark := len(r.seen)
	r.prompt(`USE_TOOL webfetch {"url":"http://` + l.ln.Addr().String() + `/","format":"text"}`)
	r.turnAllowing()
	if l.accepted.Load() != 0 {
		t.Fatalf("webfetch reached a loopback server: %v", commands(find(r.seen[mark:], agent.KindItemCompleted, "")))
	}

	// OpenCode's own timeout.
	mark = len(r.seen)
	r.prompt(`USE_TOOL bash {"command":"sleep 4545.5; echo late","timeout":1000,"description":"wait"}`)
	r.allowNext()
	r.turnEnd()
	cmd = find(r.seen[mark:], agent.KindItemCompleted, agent.ItemCommand)
	if len(cmd) != 1 || !strings.Contains(cmd[0].Item.Command.Output, "exceeding timeout") || strings.Contains(cmd[0].Item.Command.Output, "late") {
		t.Errorf("timed-out command %v", commands(cmd))
	}
	waitNoArg(t, "4545.5")

	// An interrupt.
	mark = len(r.seen)
	r.prompt("USE_SHELL sleep 4646.5 & sleep 4646.5; echo late")
	r.allowNext()
	for deadline := time.Now().Add(20 * time.Second); len(testenv.PIDsWithArg("4646.5")) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
	}
	if err := r.s.Interrupt(ctxT(t)); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	if end := r.turnEnd(); end.Turn.Status != agent.TurnInterrupted {
		t.Errorf("turn %+v %+v", end.Turn, end.Error)
	}
	if cmd := find(r.seen[mark:], agent.KindItemCompleted, agent.ItemCommand); len(cmd) != 1 || cmd[0].Item.Status != agent.ItemFailed {
		t.Errorf("interrupted command %v", commands(cmd))
	}
	waitNoArg(t, "4646.5")
}

// A runner that allows tool network gives it to the sessions that ask,
// and to them only.
func TestRealCLISandboxedToolNetwork(t *testing.T) {
	env := newSandboxedEnv(t, func(p *sandbox.Policy) { p.ToolNetwork = true })
	l := listenLoopback(t)
	for _, asks := range []bool{false, true} {
		r := env.start(t, agent.StartRequest{Options: []byte(`{"tool_network":` + strconv.FormatBool(asks) + `}`)})
		r.prompt("USE_SHELL " + l.connectScript())
		r.allowNext()
		r.turnEnd()
		cmd := find(r.seen, agent.KindItemCompleted, agent.ItemCommand)
		if len(cmd) != 1 || strings.Contains(cmd[0].Item.Command.Output, "connected: hello") != asks {
			t.Errorf("tool_network %v: %v", asks, commands(cmd))
		}
		if err := r.s.Close(); err != nil {
			t.Fatal(err)
		}
		r.rest()
	}
	if l.accepted.Load() != 1 {
		t.Errorf("%d connections, want the one of the session that asked", l.accepted.Load())
	}
}

// commands are the command (or other) items of events, for a failure's
// message.
func commands(evs []agent.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Item.Command == nil {
			out = append(out, fmt.Sprintf("%s %s %+v", e.Item.Status, e.Item.Type, e.Item))
			continue
		}
		out = append(out, fmt.Sprintf("%s %q → %q", e.Item.Status, e.Item.Command.Command, e.Item.Command.Output))
	}
	return out
}

// turnAllowing allows every approval until the turn ends.
func (r *run) turnAllowing() agent.Event {
	r.t.Helper()
	for {
		e := r.until("an approval or the turn's end", func(e agent.Event) bool {
			return e.Kind == agent.KindApprovalRequested || e.Kind == agent.KindTurnCompleted
		})
		if e.Kind == agent.KindTurnCompleted {
			return e
		}
		if err := r.s.Resolve(ctxT(r.t), agent.Resolution{ApprovalID: e.Approval.ID, Decision: agent.Allow}); err != nil {
			r.t.Fatalf("Resolve: %v", err)
		}
	}
}

// allowNext allows the next approval and returns it.
func (r *run) allowNext() *agent.Approval {
	r.t.Helper()
	req := r.until("approval.requested", kindIs(agent.KindApprovalRequested)).Approval
	if err := r.s.Resolve(ctxT(r.t), agent.Resolution{ApprovalID: req.ID, Decision: agent.Allow}); err != nil {
		r.t.Fatalf("Resolve: %v", err)
	}
	return req
}

// waitNoArg waits until no process has arg in its command line.
func waitNoArg(t *testing.T, arg string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(testenv.PIDsWithArg(arg)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command still runs: %v", testenv.PIDsWithArg(arg))
		}
	}
}

// loopbackListener is a server on the host's loopback that counts the
// connections it accepts: what a command with network could reach.
type loopbackListener struct {
	ln       net.Listener
	accepted atomic.Int32
	wg       sync.WaitGroup
}

func listenLoopback(t *testing.T) *loopbackListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &loopbackListener{ln: ln}
	l.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			_, _ = c.Write([]byte("hello from the host\n"))
			_ = c.Close()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		l.wg.Wait()
	})
	return l
}

// connectScript is a bash script that says whether it reached l.
func (l *loopbackListener) connectScript() string {
	port := strconv.Itoa(l.ln.Addr().(*net.TCPAddr).Port)
	return "if exec 3<>/dev/tcp/127.0.0.1/" + port + "; then read -r line <&3; echo \"connected: $line\"; else echo refused; fi"
}
