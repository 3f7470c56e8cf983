package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// listeningAddr reads where the runner listens from its log line, in the
// text format or as JSON (--log-format json).
func listeningAddr(line string) (string, bool) {
	if m := listeningRE.FindStringSubmatch(line); m != nil {
		return m[1], true
	}
	var rec struct{ Msg, Addr string }
	if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "runner listening" {
		return rec.Addr, true
	}
	return "", false
}

// testToken is the token startServe gives a runner when env names none
// (hosts then send it; see bearer).
const testToken = "serve-test-token-0123456789"

// bearer is the Authorization header for testToken.
func bearer() *websocket.DialOptions {
	return &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}}
}

// startServe starts `tether serve` on a free loopback port and waits until
// it says where it listens. Unless env sets TETHER_AUTH_TOKEN (even to
// nothing), the runner gets testToken. Runner records (auth.Publish) go to
// a directory of the test's own.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	base := []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "data"), "--sandbox", "off"}
	cmd := exec.Command(tetherPath(), append(base, args...)...)
	cmd.Env = slices.Clone(env)
	for k, v := range map[string]string{"TETHER_AUTH_TOKEN": testToken, "XDG_RUNTIME_DIR": t.TempDir()} {
		if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") }) {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Dir = t.TempDir()
	return watchServe(t, cmd)
}

// watchServe starts cmd, a `tether serve`, and waits until it says where
// it listens; the test's end kills it.
func watchServe(t *testing.T, cmd *exec.Cmd) *serveProc {
	t.Helper()
	p, addr := spawnServe(t, cmd)
	p.awaitAddr(addr)
	return p
}

// spawnServe starts cmd and follows its log; the address it listens on
// arrives on the channel (see awaitAddr). The test's end kills it.
func spawnServe(t *testing.T, cmd *exec.Cmd) (*serveProc, <-chan string) {
	t.Helper()
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
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if a, ok := listeningAddr(line); ok {
				select {
				case addr <- a:
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
	return p, addr
}

// awaitAddr waits until the runner says where it listens.
func (p *serveProc) awaitAddr(addr <-chan string) {
	p.t.Helper()
	p.awaitAddrWithin(addr, waitLimit)
}

func (p *serveProc) awaitAddrWithin(addr <-chan string, limit time.Duration) {
	p.t.Helper()
	select {
	case p.addr = <-addr:
	case <-p.exited:
		p.t.Fatalf("tether serve exited early:\n%s", p.log())
	case <-time.After(limit):
		p.t.Fatalf("tether serve did not say where it listens within %v:\n%s", limit, p.log())
	}
}

func (p *serveProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// lines are the log's lines so far.
func (p *serveProc) lines() []string {
	return strings.Split(strings.TrimSuffix(p.log(), "\n"), "\n")
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

// hangup sends SIGHUP and waits for one more logLine in the log.
func (p *serveProc) hangup(ctx context.Context, logLine string) {
	p.t.Helper()
	before := strings.Count(p.log(), logLine)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		p.t.Fatal(err)
	}
	for strings.Count(p.log(), logLine) == before {
		select {
		case <-ctx.Done():
			p.t.Fatalf("no %q after SIGHUP:\n%s", logLine, p.log())
		case <-time.After(10 * time.Millisecond):
		}
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
	ws, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/sessions", bearer())
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
	const token = "serve-test-other-token-0123456789"
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

// Refusals at start: beyond loopback without a token (a generated one is
// for this machine's hosts), an --agent-env entry with a value. Each says
// why, and nothing listens.
func TestServeRefusesInsecureStart(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--addr", "0.0.0.0:0", "--sandbox", "off"}, 1, "without a token"},
		{[]string{"--addr", "127.0.0.1:0", "--agent-env", "PATH,MY_KEY=s3cret"}, 2, `"MY_KEY=…" is not a name: --agent-env takes NAMES`},
	} {
		dir := t.TempDir()
		r := tether(t, dir, "", cleanEnvOnly(), append([]string{"serve", "--cli", "/bin/sh"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "runner listening") || strings.Contains(r.stderr, "s3cret") {
			t.Errorf("serve %v: exit %d\n%s", tc.args, r.code, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "tether-data", "auth-token")); err == nil {
			t.Errorf("serve %v: generated a token before refusing", tc.args)
		}
	}
}

// serve's help gives the token rule and says --agent-env takes names.
func TestServeHelp(t *testing.T) {
	r := tether(t, t.TempDir(), "", nil, "serve", "--help")
	for _, want := range []string{"at least 16 bytes", "--agent-env NAMES", "names, not NAME=value", "DATA/auth-token"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, r.stdout)
		}
	}
}

// With the defaults (sandbox on, ./tether-data) and no token, tether serve
// starts: it generates a token in a 0600 file under the directory it was
// started in and logs the file's absolute path, never the token. (Before,
// it refused: the sandbox needed a token.)
func TestServeDefaultsGenerateToken(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skipf("bubblewrap is not installed: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(tetherPath(), "serve", "--addr", "127.0.0.1:0", "--cli", mockCLI(t, "text", 0))
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "XDG_RUNTIME_DIR="+t.TempDir())
	p := watchServe(t, cmd)
	path := filepath.Join(dir, "tether-data", "auth-token")
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v\n%s", err, p.log())
	}
	tok, _ := os.ReadFile(path)
	if !strings.Contains(p.log(), "token_file="+path) || strings.Contains(p.log(), strings.TrimSpace(string(tok))) {
		t.Fatalf("the log should name the file, never the token:\n%s", p.log())
	}
}

// tether run --runner on the same machine finds the generated token; with
// no record to find it by, the runner refuses it.
func TestServeGeneratedTokenFoundByRun(t *testing.T) {
	records := t.TempDir()
	p := startServe(t, cleanEnv("TETHER_AUTH_TOKEN=", "XDG_RUNTIME_DIR="+records), "--cli", mockCLI(t, "text", 0))
	url := "ws://" + p.addr + "/sessions"
	r := tether(t, t.TempDir(), "", append(cleanEnvOnly(), "XDG_RUNTIME_DIR="+records), "run", "--runner", url, "--approve=allow", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "Hello") {
		t.Fatalf("run with the discovered token: exit %d\n%s\n%s\nrunner:\n%s", r.code, r.stdout, r.stderr, p.log())
	}
	r = tether(t, t.TempDir(), "", append(cleanEnvOnly(), "XDG_RUNTIME_DIR="+t.TempDir()), "run", "--runner", url, "--approve=allow", "hi")
	if r.code != 1 || !strings.Contains(r.stderr, "refused the token") {
		t.Fatalf("run without a record: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(p.log(), `msg="connection refused"`) {
		t.Fatalf("the refusal is not in the runner's log:\n%s", p.log())
	}
}

// Removing the generated token's file and sending SIGHUP rotates it: the
// old token is refused, and tether run on this machine finds the new one.
func TestServeSIGHUPRotatesGeneratedToken(t *testing.T) {
	records, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	p := startServe(t, cleanEnv("TETHER_AUTH_TOKEN=", "XDG_RUNTIME_DIR="+records), "--cli", mockCLI(t, "text", 0), "--data", data)
	file := filepath.Join(data, "auth-token")
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	p.hangup(ctx, "host tokens reloaded")
	fresh, err := os.ReadFile(file)
	if err != nil || string(fresh) == string(old) {
		t.Fatalf("no new token: %v", err)
	}
	url := "ws://" + p.addr + "/sessions"
	h := http.Header{"Authorization": {"Bearer " + strings.TrimSpace(string(old))}}
	if ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		if ws != nil {
			ws.CloseNow()
		}
		t.Fatalf("the old generated token after the rotation: %v", err)
	}
	r := tether(t, t.TempDir(), "", append(cleanEnvOnly(), "XDG_RUNTIME_DIR="+records), "run", "--runner", url, "--approve=allow", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, "Hello") {
		t.Fatalf("run with the rotated token: exit %d\n%s\n%s\nrunner:\n%s", r.code, r.stdout, r.stderr, p.log())
	}
}

// cleanEnvOnly is for tether(), which adds its env to os.Environ(): it
// blanks the token variables instead.
func cleanEnvOnly() []string {
	return []string{"TETHER_AUTH_TOKEN=", "SIDECAR_AUTH_TOKEN="}
}

// SIGHUP reloads the token file: a token taken out of it is refused from
// then on and its open connection closes, saying why; a token added works
// at once; a reload of a file with a bad token changes nothing.
func TestServeSIGHUPRevokesTokens(t *testing.T) {
	const (
		tokA = "serve-test-token-aaaaaaaaaaaaaaaa"
		tokB = "serve-test-token-bbbbbbbbbbbbbbbb"
		tokC = "serve-test-token-cccccccccccccccc"
	)
	file := filepath.Join(t.TempDir(), "tokens")
	write := func(lines ...string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(tokA, tokB)
	p := startServe(t, cleanEnv("TETHER_AUTH_TOKEN="), "--cli", mockCLI(t, "text", 0), "--auth-token-file", file)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	dial := func(tok string) (*websocket.Conn, int) {
		ws, resp, err := websocket.Dial(ctx, "ws://"+p.addr+"/sessions",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
		if err != nil {
			if resp == nil {
				t.Fatalf("dial: %v", err)
			}
			return nil, resp.StatusCode
		}
		return ws, http.StatusSwitchingProtocols
	}

	wsA, code := dial(tokA)
	if code != http.StatusSwitchingProtocols {
		t.Fatalf("token A before the reload: %d", code)
	}
	defer wsA.CloseNow()
	wsSend(t, wsA, map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "hup"})
	if f := wsNext(t, wsA); f["type"] != "ready" {
		t.Fatalf("init: %v\n%s", f, p.log())
	}

	// A connection on token A that has not sent its init frame yet.
	idleA, code := dial(tokA)
	if code != http.StatusSwitchingProtocols {
		t.Fatalf("token A's second connection before the reload: %d", code)
	}
	defer idleA.CloseNow()

	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+p.addr+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+tokA)
	req.Header.Set("Accept", "text/event-stream")
	feed, err := http.DefaultClient.Do(req)
	if err != nil || feed.StatusCode != http.StatusOK {
		t.Fatalf("the runner's event stream with token A: %v %v", feed, err)
	}
	defer feed.Body.Close()

	write(tokB, tokC)
	p.hangup(ctx, "host tokens reloaded")
	if _, err := io.Copy(io.Discard, feed.Body); ctx.Err() != nil {
		t.Fatalf("token A's event stream is still open after its revocation: %v", err)
	}
	for name, ws := range map[string]*websocket.Conn{"session": wsA, "before its init": idleA} {
		_, _, err = ws.Read(ctx)
		var closed websocket.CloseError
		if !errors.As(err, &closed) || closed.Code != websocket.StatusPolicyViolation || !strings.Contains(closed.Reason, "revoked") {
			t.Fatalf("token A's connection (%s) after its revocation: %v", name, err)
		}
	}
	for tok, want := range map[string]int{tokA: http.StatusUnauthorized, tokB: http.StatusSwitchingProtocols, tokC: http.StatusSwitchingProtocols} {
		ws, code := dial(tok)
		if ws != nil {
			ws.CloseNow()
		}
		if code != want {
			t.Fatalf("token %.20s… after the reload: %d, want %d", tok, code, want)
		}
	}

	write(tokC, "short")
	p.hangup(ctx, "host tokens not reloaded")
	if ws, code := dial(tokB); code != http.StatusSwitchingProtocols {
		t.Fatalf("a failed reload dropped token B: %d", code)
	} else {
		ws.CloseNow()
	}
	for _, tok := range []string{tokA, tokB, tokC} {
		if strings.Contains(p.log(), tok) {
			t.Fatalf("a token shows in the log:\n%s", p.log())
		}
	}
}
