package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/server"
)

func TestMain(m *testing.M) {
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

const (
	tokenA = "token-a-0123456789abcdef"
	tokenB = "token-b-0123456789abcdef"
)

// running is a server.Run in the background.
type running struct {
	t      *testing.T
	addr   string
	cfg    server.Config // as given to Run
	cancel context.CancelFunc
	done   chan error
	logs   *testenv.SyncBuffer
}

// serve runs the server with the mock CLI (this test binary) as its agent.
// server.Run hands agents only the variables it is told to, so the mock's
// switches go through the environment and AgentEnv.
func serve(t *testing.T, scenario string, cfg server.Config) *running {
	t.Helper()
	return serveMock(t, map[string]string{mockclaude.EnvScenario: scenario}, cfg)
}

// serveMock is serve with more of the mock's environment (read once, when
// the server starts).
func serveMock(t *testing.T, mock map[string]string, cfg server.Config) *running {
	t.Helper()
	mockEnv := map[string]string{mockclaude.EnvMain: "1", mockclaude.EnvDelayMS: "20", "GORACE": "atexit_sleep_ms=0"}
	maps.Copy(mockEnv, mock)
	for k, v := range mockEnv {
		t.Setenv(k, v)
		cfg.AgentEnv = append(cfg.AgentEnv, k)
	}
	dir := t.TempDir()
	if cfg.DataDir == "" {
		cfg.DataDir = filepath.Join(dir, "data")
		cfg.WorkspaceRoot = filepath.Join(dir, "ws")
	}
	if cfg.CLIPath == "" {
		cfg.CLIPath = os.Args[0]
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Auth.Getenv == nil {
		cfg.Auth.Getenv = func(string) string { return "" }
	}
	if cfg.RecordDir == "" {
		cfg.RecordDir = filepath.Join(dir, "records")
	}
	logs := &testenv.SyncBuffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	ready := make(chan string, 1)
	cfg.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{t: t, cfg: cfg, cancel: cancel, done: make(chan error, 1), logs: logs}
	go func() { r.done <- server.Run(ctx, cfg) }()
	select {
	case r.addr = <-ready:
	case err := <-r.done:
		cancel()
		t.Fatalf("Run: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("not ready")
	}
	t.Cleanup(func() { r.stop(30 * time.Second) })
	return r
}

// stop cancels Run's context and waits for it to return.
func (r *running) stop(within time.Duration) error {
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for another stop
		return err
	case <-time.After(within):
		r.t.Fatalf("Run did not return within %v of its context ending", within)
		return nil
	}
}

func (r *running) url() string { return "ws://" + r.addr + "/sessions" }

// generated is the token the runner generated (it had none configured).
func (r *running) generated() string {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join(r.cfg.DataDir, auth.GeneratedTokenFile))
	if err != nil {
		r.t.Fatalf("generated token: %v", err)
	}
	return strings.TrimSpace(string(data))
}

// dial opens a WebSocket with token ("" for none).
func (r *running) dial(token string) (*websocket.Conn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	ws, resp, err := websocket.Dial(ctx, r.url(), &websocket.DialOptions{HTTPHeader: h})
	if err == nil {
		r.t.Cleanup(func() { ws.CloseNow() })
	}
	return ws, resp, err
}

func (r *running) mustDial(token string) *websocket.Conn {
	r.t.Helper()
	ws, _, err := r.dial(token)
	if err != nil {
		r.t.Fatalf("dial with %q: %v", token, err)
	}
	return ws
}

func send(t *testing.T, ws *websocket.Conn, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

func next(t *testing.T, ws *websocket.Conn) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, data, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func until(t *testing.T, ws *websocket.Conn, typ string) []map[string]any {
	t.Helper()
	var got []map[string]any
	for {
		f := next(t, ws)
		got = append(got, f)
		if f["type"] == typ {
			return got
		}
	}
}

// session opens a session in workspace and runs one turn.
func session(t *testing.T, ws *websocket.Conn, workspace string) {
	t.Helper()
	send(t, ws, map[string]any{"type": "init", "protocol_version": 1, "workspace_id": workspace})
	if f := next(t, ws); f["type"] != "ready" {
		t.Fatalf("init: %v", f)
	}
	send(t, ws, map[string]any{"type": "query", "request_id": "q1", "prompt": "hi"})
	frames := until(t, ws, "done")
	if done := frames[len(frames)-1]; done["reason"] != "completed" {
		t.Fatalf("done = %v", done)
	}
}

func status(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

func TestAuth(t *testing.T) {
	r := serve(t, "text", server.Config{Auth: auth.LoadOptions{Tokens: []string{tokenA, tokenB}}})
	for _, tc := range []struct{ name, header string }{
		{"no token", ""},
		{"wrong token", "Bearer wrong-0123456789abcdef"},
		{"token prefix", "Bearer " + tokenA[:len(tokenA)-1]},
		{"basic scheme", "Basic " + tokenA},
		{"bare token", tokenA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			h := http.Header{}
			if tc.header != "" {
				h.Set("Authorization", tc.header)
			}
			ws, resp, err := websocket.Dial(ctx, r.url(), &websocket.DialOptions{HTTPHeader: h})
			if err == nil {
				ws.CloseNow()
				t.Fatal("upgraded without a valid token")
			}
			if status(resp) != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("status %d, WWW-Authenticate %q", status(resp), resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	// Both tokens of a rotation work.
	for i, tok := range []string{tokenA, tokenB} {
		ws := r.mustDial(tok)
		session(t, ws, fmt.Sprint("w", i))
		ws.Close(websocket.StatusNormalClosure, "")
	}
	if err := r.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestAuthFromEnvironment(t *testing.T) {
	env := map[string]string{
		auth.EnvToken:        tokenA + ", " + tokenB,
		auth.EnvSidecarToken: "sidecar-0123456789abcdef",
	}
	r := serve(t, "text", server.Config{Auth: auth.LoadOptions{Getenv: func(k string) string { return env[k] }}})
	for i, tok := range []string{tokenA, tokenB, "sidecar-0123456789abcdef"} {
		session(t, r.mustDial(tok), fmt.Sprint("w", i))
	}
	if _, resp, err := r.dial(""); err == nil || status(resp) != http.StatusUnauthorized {
		t.Fatalf("no token: %v, status %d", err, status(resp))
	}
}

// The runner refuses to listen beyond loopback without a configured token,
// with a typed error, before it listens at all.
func TestRefusesOpenAddressWithoutToken(t *testing.T) {
	dir := t.TempDir()
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		called := false
		err := server.Run(context.Background(), server.Config{
			Addr: addr, DataDir: filepath.Join(dir, "data"), WorkspaceRoot: filepath.Join(dir, "ws"),
			CLIPath: os.Args[0], Auth: auth.LoadOptions{Getenv: func(string) string { return "" }},
			Ready: func(string) { called = true },
		})
		var insecure *auth.InsecureListenError
		if !errors.As(err, &insecure) || !errors.Is(err, auth.ErrTokenRequired) || insecure.Addr != addr {
			t.Fatalf("addr %s: %v", addr, err)
		}
		if called {
			t.Fatalf("addr %s: listened anyway", addr)
		}
		// A generated token is for hosts on this machine: it does not
		// open the runner to others.
		if _, err := os.Stat(filepath.Join(dir, "data", auth.GeneratedTokenFile)); err == nil {
			t.Fatalf("addr %s: generated a token", addr)
		}
	}
	// A token that cannot be used is an error of its own.
	err := server.Run(context.Background(), server.Config{Addr: "127.0.0.1:0", DataDir: dir, WorkspaceRoot: dir + "/ws",
		Auth: auth.LoadOptions{Getenv: func(k string) string {
			if k == auth.EnvToken {
				return "short"
			}
			return ""
		}}})
	if !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("short token: %v", err)
	}
}

func TestHealthEndpoints(t *testing.T) {
	r := serve(t, "text", server.Config{Auth: auth.LoadOptions{Tokens: []string{tokenA}}})
	for path, body := range map[string]string{"/healthz": "ok\n", "/readyz": "ready\n"} {
		resp, err := http.Get("http://" + r.addr + path) // no token needed
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != body {
			t.Fatalf("%s: %d %q", path, resp.StatusCode, b)
		}
	}
	resp, err := http.Get("http://" + r.addr + "/sessions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/sessions without a token: %d", resp.StatusCode)
	}
}

func TestConnectionLimitPerToken(t *testing.T) {
	r := serve(t, "text", server.Config{MaxConnsPerToken: 2, Auth: auth.LoadOptions{Tokens: []string{tokenA, tokenB}}})
	a1 := r.mustDial(tokenA)
	a2 := r.mustDial(tokenA)
	_, resp, err := r.dial(tokenA)
	if err == nil || status(resp) != http.StatusTooManyRequests {
		t.Fatalf("third connection with one token: %v, status %d", err, status(resp))
	}
	// Another token has its own allowance.
	session(t, r.mustDial(tokenB), "wb")
	// A closed connection gives its slot back.
	a1.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		ws, resp, err := r.dial(tokenA)
		if err == nil {
			session(t, ws, "wa")
			break
		}
		if status(resp) != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after closing one: %v, status %d", err, status(resp))
		}
		time.Sleep(10 * time.Millisecond)
	}
	session(t, a2, "wa2")
}

// Run's context ending is a graceful shutdown: the turn in progress ends,
// the host sees its done and a normal close, the agent is gone, and a
// connection still waiting for its init does not hold Run up.
func TestGracefulShutdown(t *testing.T) {
	r := serve(t, "slow", server.Config{ShutdownTimeout: 20 * time.Second}) // a turn takes 1 s
	idle := r.mustDial(r.generated())                                       // never sends init
	ws := r.mustDial(r.generated())
	send(t, ws, map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "w"})
	if f := next(t, ws); f["type"] != "ready" {
		t.Fatal(f)
	}
	send(t, ws, map[string]any{"type": "query", "request_id": "q1", "prompt": "hi"})
	next(t, ws) // system/init: the turn is under way
	if n := len(mockPids()); n != 1 {
		t.Fatalf("%d agents running", n)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- r.stop(30 * time.Second) }()
	frames := until(t, ws, "done")
	if done := frames[len(frames)-1]; done["reason"] != "completed" {
		t.Fatalf("turn cut short: %v", done)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := ws.Read(ctx); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("after done: %v, want going away", err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if pids := mockPids(); len(pids) != 0 {
		t.Fatalf("agents left running: %v", pids)
	}
	if _, _, err := idle.Read(ctx); err == nil {
		t.Fatal("idle connection still open")
	}
	if _, err := http.Get("http://" + r.addr + "/healthz"); err == nil {
		t.Fatal("still serving after Run returned")
	}
}

func TestShutdownTimeout(t *testing.T) {
	r := serveMock(t, map[string]string{mockclaude.EnvScenario: "slow", mockclaude.EnvDelayMS: "500"}, // a turn takes 25 s
		server.Config{ShutdownTimeout: 300 * time.Millisecond})
	ws := r.mustDial(r.generated())
	send(t, ws, map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "w"})
	next(t, ws)
	send(t, ws, map[string]any{"type": "query", "request_id": "q1", "prompt": "hi"})
	next(t, ws)
	closed := make(chan error, 1)
	go func() { // a host reads on, and so answers the runner's close
		for {
			if _, _, err := ws.Read(context.Background()); err != nil {
				closed <- err
				return
			}
		}
	}()
	start := time.Now()
	if err := r.stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("closed with %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Run took %v to return with a 300ms shutdown timeout", took)
	}
	if pids := mockPids(); len(pids) != 0 {
		t.Fatalf("agents left running: %v", pids)
	}
}

// mockPids lists live mock processes started by this test binary.
func mockPids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 || fields[1] != self || fields[0] == "Z" {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err == nil && bytes.Contains(append([]byte{0}, env...), []byte("\x00"+mockclaude.EnvMain+"=1\x00")) {
			out = append(out, pid)
		}
	}
	return out
}
