package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/internal/mockclaude"
)

// serveProc is a running `tether serve`.
type serveProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	mu     sync.Mutex
	stderr strings.Builder
	exited chan struct{}
}

// mockCLI writes a script that runs tether's built-in mock as the claude
// CLI: `tether serve` hands agents only a whitelisted environment, so the
// scenario is set in the script itself.
func mockCLI(t *testing.T, scenario string, delayMS int, exports ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\n" +
		"export " + mockclaude.EnvScenario + "=" + scenario + "\n" +
		"export " + mockclaude.EnvDelayMS + "=" + strconv.Itoa(delayMS) + "\n"
	for _, kv := range exports {
		script += "export " + kv + "\n"
	}
	script += "exec " + tetherPath() + " mock-claude \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// cleanEnv is this process's environment without tokens or mock switches.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "TETHER_AUTH_TOKEN" || k == "SIDECAR_AUTH_TOKEN" || strings.HasPrefix(k, "TETHER_MOCK") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

var listeningRE = regexp.MustCompile(`msg="runner listening" addr=(\S+)`)

// startServe starts `tether serve` on a free loopback port and waits until
// it says where it listens.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	base := []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "data"), "--sandbox", "off"}
	cmd := exec.Command(tetherPath(), append(base, args...)...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{t: t, cmd: cmd, exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pipe)
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	select {
	case p.addr = <-addr:
	case <-p.exited:
		t.Fatalf("tether serve exited early:\n%s", p.log())
	case <-time.After(waitLimit):
		t.Fatalf("tether serve did not say where it listens:\n%s", p.log())
	}
	return p
}

func (p *serveProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait waits for the process to exit and returns its exit code.
func (p *serveProc) wait(within time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		p.t.Fatalf("tether serve still running after %v:\n%s", within, p.log())
		return -1
	}
}

func wsSend(t *testing.T, ws *websocket.Conn, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

func wsNext(t *testing.T, ws *websocket.Conn) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, data, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

// `tether serve` answers /healthz, and on SIGTERM lets the turn in
// progress finish, stops its agent and exits 0 within the shutdown timeout.
func TestServeHealthzAndSIGTERM(t *testing.T) {
	cli := mockCLI(t, "slow", 20) // a turn takes 1 s
	p := startServe(t, cleanEnv(), "--cli", cli, "--shutdown-timeout", "10s")
	resp, err := http.Get("http://" + p.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
		t.Fatalf("/healthz: %d %q", resp.StatusCode, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/sessions", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	wsSend(t, ws, map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "cmd"})
	if f := wsNext(t, ws); f["type"] != "ready" {
		t.Fatalf("init: %v\n%s", f, p.log())
	}
	wsSend(t, ws, map[string]any{"type": "query", "request_id": "q1", "prompt": "hi"})
	wsNext(t, ws) // system/init: the turn is under way
	agents := children(p.cmd.Process.Pid)
	if len(agents) != 1 {
		t.Fatalf("tether serve has %d child processes, want the agent alone", len(agents))
	}

	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var last map[string]any
	for {
		f := wsNext(t, ws)
		if f["type"] == "done" {
			last = f
			break
		}
	}
	if last["reason"] != "completed" {
		t.Fatalf("turn cut short by SIGTERM: %v", last)
	}
	// The runner tells the host it is going away (come back, resume).
	rctx, rcancel := context.WithTimeout(context.Background(), waitLimit)
	defer rcancel()
	if _, _, err := ws.Read(rctx); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("after done: %v", err)
	}
	if code := p.wait(10*time.Second + 5*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, p.log())
	}
	t.Logf("exited %v after SIGTERM", time.Since(start))
	for _, pid := range agents {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Errorf("agent process %d outlived tether serve", pid)
		}
	}
	if !strings.Contains(p.log(), "runner shutting down") {
		t.Errorf("no shutdown in the log:\n%s", p.log())
	}
}

// An idle runner exits 0 on SIGTERM at once.
func TestServeIdleSIGTERM(t *testing.T) {
	p := startServe(t, cleanEnv(), "--cli", mockCLI(t, "text", 0))
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, p.log())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("idle runner took %v to stop", took)
	}
}

func TestServeTokens(t *testing.T) {
	const token = "serve-test-token-0123456789"
	p := startServe(t, cleanEnv("TETHER_AUTH_TOKEN="+token), "--cli", mockCLI(t, "text", 0))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if ws, resp, err := websocket.Dial(ctx, "ws://"+p.addr+"/sessions", nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		if ws != nil {
			ws.CloseNow()
		}
		t.Fatalf("no token: %v", err)
	}
	h := http.Header{"Authorization": {"Bearer " + token}}
	ws, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/sessions", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	if strings.Contains(p.log(), token) {
		t.Errorf("the token shows in the log:\n%s", p.log())
	}
}

// Refusals at start: beyond loopback without a token, the sandbox without
// a token. Each exits 1 with a reason, and nothing listens.
func TestServeRefusesInsecureStart(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "0.0.0.0:0", "--sandbox", "off"}, "without a token"},
		{[]string{"--addr", "127.0.0.1:0", "--sandbox", "on"}, "must authenticate"},
	} {
		r := tether(t, t.TempDir(), "", cleanEnvOnly(), append([]string{"serve", "--data", filepath.Join(t.TempDir(), "d"), "--cli", "/bin/sh"}, tc.args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "runner listening") {
			t.Errorf("serve %v: exit %d\n%s", tc.args, r.code, r.stderr)
		}
	}
}

// cleanEnvOnly is for tether(), which adds its env to os.Environ(): it
// blanks the token variables instead.
func cleanEnvOnly() []string {
	return []string{"TETHER_AUTH_TOKEN=", "SIDECAR_AUTH_TOKEN="}
}
