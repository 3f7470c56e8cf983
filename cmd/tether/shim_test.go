package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/shimclient"
)

// Command lines and environments the shim refuses, each with the reason
// and the usage exit status, before it announces anything.
func TestShimRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--mock", "--agent", "codex"}, nil, "contradict"},
		{nil, []string{"AGENT_PORT=x"}, `AGENT_PORT "x" is not a port`},
		{[]string{"--agent", "no-such-agent"}, []string{"AGENT_PORT=0"}, `no agent "no-such-agent"`},
		{[]string{"--mock"}, []string{"AGENT_PORT=0", "AGENT_BOOTSTRAP={"}, "AGENT_BOOTSTRAP is not JSON"},
		{[]string{"--mock", "--host", "0.0.0.0"}, []string{"AGENT_PORT=0", "TETHER_SHIM_TOKEN="},
			"refusing to listen on 0.0.0.0 without a token: it is not a loopback address"},
		{[]string{"--mock", "--host", "::"}, []string{"AGENT_PORT=0", "AGENT_BOOTSTRAP={\"backendToken\":\"" + shimToken + "\"}"},
			"refusing to listen on :: without a token"},
		{[]string{"--mock"}, []string{"AGENT_PORT=0", "TETHER_SHIM_TOKEN=short"}, "token from TETHER_SHIM_TOKEN: shorter than 16 bytes"},
		{[]string{"--mock"}, []string{"AGENT_PORT=0", "TETHER_SHIM_TOKEN=" + shimToken, "AGENT_BOOTSTRAP={\"shimToken\":\"" + shimToken + "-other\"}"},
			"AGENT_BOOTSTRAP's shimToken and TETHER_SHIM_TOKEN differ"},
	} {
		dir := t.TempDir()
		r := tether(t, dir, "", tc.env, append([]string{"shim", "--workspace", filepath.Join(dir, "ws")}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stdout, "port") {
			t.Errorf("shim %v %v: exit %d\nstdout %s\nstderr %s", tc.args, tc.env, r.code, r.stdout, r.stderr)
		}
	}
}

// The mock shim as the backend launches it: the port announced, a run to
// its completion, and SIGTERM ends it cleanly.
func TestShimMockLaunched(t *testing.T) {
	dir := t.TempDir()
	child := shimclient.Launch(t, nil, `{"backendUrl":"http://127.0.0.1:9","agentId":"a1"}`, tetherPath(),
		"shim", "--mock", "--workspace", filepath.Join(dir, "ws"), "--data-dir", filepath.Join(t.TempDir(), "data"))
	c := &shimclient.Client{T: t, Base: "http://localhost:" + strconv.Itoa(child.Port), AgentID: "a1"}
	events := c.Events("")
	c.Must(200, "POST", "/spawn", map[string]any{"agentId": "a1", "role": "r", "description": "hello", "workstream": "w",
		"projectBrief": map[string]any{"title": "t", "description": "d"}}, nil)
	done := events.Until("completion", 30*time.Second)
	if done[len(done)-1].Str("outcome") != "success" {
		t.Errorf("completion %+v", done[len(done)-1].Event)
	}
	var cp struct {
		Checkpoint struct {
			SDK            string `json:"sdk"`
			ScriptPosition int    `json:"scriptPosition"`
		} `json:"checkpoint"`
	}
	var raw map[string]any
	c.Must(200, "POST", "/checkpoint", map[string]any{"decisionId": ""}, &raw)
	c.Must(200, "POST", "/checkpoint", map[string]any{"decisionId": ""}, &cp)
	events.Close()
	child.Stop(t)
	if code := child.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d after SIGTERM\n%s", code, child.Stderr())
	}
	if cp.Checkpoint.SDK != "mock" || cp.Checkpoint.ScriptPosition != 1 {
		t.Fatalf("checkpoint %+v", cp)
	}

	// Another shim process resumes the mock from its script position.
	other := shimclient.Launch(t, nil, "", tetherPath(), "shim", "--mock", "--workspace", filepath.Join(dir, "ws"))
	c2 := &shimclient.Client{T: t, Base: "http://localhost:" + strconv.Itoa(other.Port), AgentID: "a1"}
	events2 := c2.Events("")
	c2.Must(200, "POST", "/resume", raw, nil)
	again := events2.Until("completion", 30*time.Second)
	if s := again[len(again)-1].Str("summary"); !strings.Contains(s, "Mock reply to turn 2") {
		t.Errorf("resumed in another process: %q", s)
	}
}

// /health measures: the memory of the shim's process tree and the disk its
// workspace takes (a 2 MiB file in it shows), and a CPU share never above
// 100 × the cores, from the first /health (whose window is too short to
// measure: on a fresh machine it read 444–570% on two cores) through the
// first full window (a second) and past it, however loaded the machine.
func TestShimHealthMeasures(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 2<<20)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(filepath.Join(ws, "data.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	child := shimclient.Launch(t, nil, "", tetherPath(), "shim", "--mock", "--workspace", ws)
	c := child.Client(t, "a1")
	type usage struct {
		CPUPercent float64 `json:"cpuPercent"`
		MemoryMb   float64 `json:"memoryMb"`
		DiskMb     float64 `json:"diskMb"`
	}
	limit := 100 * float64(runtime.NumCPU())
	var readings []usage
	for start := time.Now(); len(readings) < 3 || time.Since(start) < 1500*time.Millisecond; time.Sleep(100 * time.Millisecond) {
		var health struct {
			ResourceUsage usage `json:"resourceUsage"`
		}
		c.Must(200, "GET", "/health", nil, &health)
		readings = append(readings, health.ResourceUsage)
	}
	child.Stop(t)
	for i, u := range readings {
		if u.MemoryMb < 5 || u.DiskMb < 2 || u.DiskMb > 3 || u.CPUPercent < 0 || u.CPUPercent > limit {
			t.Errorf("reading %d of %d: resource usage %+v (CPU at most %.0f%%)", i+1, len(readings), u, limit)
		}
	}
}

// shimToken is a token tests give the shim.
const shimToken = "cmd-shim-test-token-0123456789"

// backendHeaders are what the Project Tab backend's calls carry (Node's
// fetch): a JSON body, no Origin, no Sec-Fetch-Site.
func backendHeaders(token string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"*/*"}, "Accept-Language": {"*"},
		"Accept-Encoding": {"gzip, deflate"}, "Sec-Fetch-Mode": {"cors"}, "User-Agent": {"node"}}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return h
}

// send makes one request with exactly hdr (and host, when set) and
// decodes a 2xx reply into out; it returns the status and the body.
func send(t *testing.T, port int, host, method, path string, hdr http.Header, body any, out any) (int, string) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://127.0.0.1:"+strconv.Itoa(port)+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr.Clone()
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode, string(data)
}

func mustSend(t *testing.T, port int, method, path string, hdr http.Header, body any, out any) {
	t.Helper()
	if status, reply := send(t, port, "", method, path, hdr, body, out); status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, status, reply)
	}
}

// The backend's smoke flow against the real binary, with the backend's
// exact headers: its health poll, the event socket first (no Origin), a
// spawn with the brief, a decision, the decision checkpoint, the
// resolution, the completion and a kill — without a token, with one from
// the environment and with one from the bootstrap.
func TestShimBackendSmokeFlow(t *testing.T) {
	for _, tc := range []struct {
		name, bootstrap string
		env             []string
		token           string
	}{
		{"no token", `{"backendUrl":"http://127.0.0.1:9","backendToken":"b","agentId":"a1"}`, nil, ""},
		{"token in the environment", `{"backendUrl":"http://127.0.0.1:9","agentId":"a1"}`, []string{"TETHER_SHIM_TOKEN=" + shimToken}, shimToken},
		{"token in the bootstrap", `{"backendUrl":"http://127.0.0.1:9","agentId":"a1","shimToken":"` + shimToken + `"}`, nil, shimToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			child := shimclient.Launch(t, tc.env, tc.bootstrap, tetherPath(), "shim", "--mock", "--workspace", filepath.Join(dir, "ws"))
			if child.Token != tc.token {
				t.Fatalf("the launch's token %q", child.Token)
			}
			hdr := backendHeaders(tc.token)
			var health map[string]any
			mustSend(t, child.Port, "GET", "/health", hdr, nil, &health)
			if health["status"] != "healthy" {
				t.Fatalf("health %v", health)
			}
			events := child.Client(t, "a1").Events("")
			var handle map[string]any
			mustSend(t, child.Port, "POST", "/spawn", hdr, map[string]any{"agentId": "a1", "role": "r", "description": "REQUEST_APPROVAL",
				"workstream": "w", "projectBrief": map[string]any{"title": "t", "description": "d"}}, &handle)
			if handle["id"] != "a1" || handle["status"] != "running" {
				t.Fatalf("spawn reply %v", handle)
			}
			seen := events.Until("decision/tool_approval", waitLimit)
			decision := seen[len(seen)-1].Str("decisionId")
			var cp map[string]any
			mustSend(t, child.Port, "POST", "/checkpoint", hdr, map[string]any{"decisionId": decision}, &cp)
			if cp["serializedBy"] != "decision_checkpoint" || cp["agentId"] != "a1" {
				t.Fatalf("checkpoint %v", cp)
			}
			var resolved map[string]any
			mustSend(t, child.Port, "POST", "/resolve", hdr, map[string]any{"decisionId": decision,
				"resolution": map[string]any{"type": "tool_approval", "action": "approve", "actionKind": "update"}}, &resolved)
			if resolved["status"] != "resolved" {
				t.Fatalf("resolve %v", resolved)
			}
			done := events.Until("completion", waitLimit)
			if done[len(done)-1].Str("outcome") != "success" {
				t.Fatalf("completion %+v", done[len(done)-1].Event)
			}
			var kill map[string]any
			mustSend(t, child.Port, "POST", "/kill", hdr, map[string]any{"grace": true}, &kill)
			events.Close()
			child.Stop(t)
			if code := child.Cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit %d\n%s", code, child.Stderr())
			}
		})
	}
}

// What a web page could send the real shim is refused: a rebound Host,
// an Origin or a cross-site Sec-Fetch-Site, a text/plain body, a
// WebSocket from a page; with a token, a request without it or with
// another one; and event streams past the cap. None of it starts a run.
func TestShimRefusesForeignRequests(t *testing.T) {
	for _, token := range []string{"", shimToken} {
		dir := t.TempDir()
		var env []string
		if token != "" {
			env = []string{"TETHER_SHIM_TOKEN=" + token}
		}
		child := shimclient.Launch(t, env, "", tetherPath(), "shim", "--mock", "--workspace", filepath.Join(dir, "ws"))
		port := strconv.Itoa(child.Port)
		brief := map[string]any{"agentId": "a1", "description": "hello"}
		hdr := backendHeaders(token)
		for _, tc := range []struct {
			name   string
			host   string
			hdr    http.Header
			status int
		}{
			{"rebound Host", "evil.example:" + port, hdr, 403},
			{"Origin", "", withHeader(hdr, "Origin", "http://127.0.0.1:8000"), 403},
			{"Sec-Fetch-Site", "", withHeader(hdr, "Sec-Fetch-Site", "cross-site"), 403},
			{"text/plain", "", withHeader(hdr, "Content-Type", "text/plain;charset=UTF-8"), 415},
			{"no Content-Type", "", withHeader(hdr, "Content-Type", ""), 415},
		} {
			if status, reply := send(t, child.Port, tc.host, "POST", "/spawn", tc.hdr, brief, nil); status != tc.status {
				t.Errorf("token %q, %s: %d %s, want %d", token, tc.name, status, reply, tc.status)
			}
		}
		if token != "" {
			for name, h := range map[string]http.Header{"none": backendHeaders(""), "another": backendHeaders(shimToken + "x")} {
				status, reply := send(t, child.Port, "", "POST", "/spawn", h, brief, nil)
				if status != 401 || !strings.Contains(reply, "Authorization: Bearer") {
					t.Errorf("token %s: %d %s", name, status, reply)
				}
			}
			if status, _ := dialEvents(t, child.Port, "", nil); status != 401 {
				t.Errorf("WS /events without the token: %d", status)
			}
		}
		auth := http.Header{}
		if token != "" {
			auth.Set("Authorization", "Bearer "+token)
		}
		if status, _ := dialEvents(t, child.Port, "", withHeader(auth, "Origin", "http://127.0.0.1:8000")); status != 403 {
			t.Errorf("WS /events from a page: %d", status)
		}
		if status, _ := dialEvents(t, child.Port, "evil.example:"+port, auth); status != 403 {
			t.Errorf("WS /events with a rebound Host: %d", status)
		}
		var conns []*websocket.Conn
		for range shim.DefaultMaxSubscribers {
			status, ws := dialEvents(t, child.Port, "", auth)
			if status != 101 {
				t.Fatalf("subscriber %d: %d", len(conns)+1, status)
			}
			conns = append(conns, ws)
		}
		if status, _ := dialEvents(t, child.Port, "", auth); status != 503 {
			t.Errorf("subscriber %d: %d, want 503", shim.DefaultMaxSubscribers+1, status)
		}
		for _, ws := range conns {
			ws.CloseNow()
		}
		var health map[string]any
		mustSend(t, child.Port, "GET", "/health", hdr, nil, &health)
		if health["agentStatus"] != "completed" {
			t.Errorf("token %q: a refused request started a run: %v", token, health)
		}
		if log := child.Stderr(); !strings.Contains(log, "request refused") || (token != "" && strings.Contains(log, token)) {
			t.Errorf("the refusals' log (never the token):\n%s", log)
		}
		child.Stop(t)
	}
}

// --host beyond loopback takes a token; the shim then answers on every
// interface, with it. (Without one it refuses to start: TestShimRefuses.)
func TestShimBeyondLoopbackWithAToken(t *testing.T) {
	dir := t.TempDir()
	child := shimclient.Launch(t, []string{"TETHER_SHIM_TOKEN=" + shimToken}, "", tetherPath(), "shim", "--mock", "--host", "0.0.0.0",
		"--workspace", filepath.Join(dir, "ws"))
	mustSend(t, child.Port, "GET", "/health", backendHeaders(shimToken), nil, nil)
	if status, _ := send(t, child.Port, "", "GET", "/health", backendHeaders(""), nil, nil); status != 401 {
		t.Errorf("without the token: %d", status)
	}
	child.Stop(t)
}

func withHeader(h http.Header, k, v string) http.Header {
	out := h.Clone()
	if v == "" {
		out.Del(k)
	} else {
		out.Set(k, v)
	}
	return out
}

// dialEvents opens WS /events with hdr; the handshake's status, and the
// connection when it opened (the test's to close).
func dialEvents(t *testing.T, port int, host string, hdr http.Header) (int, *websocket.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, "ws://127.0.0.1:"+strconv.Itoa(port)+"/events", &websocket.DialOptions{HTTPHeader: hdr, Host: host})
	if err != nil {
		if resp == nil {
			t.Fatalf("dial: %v", err)
		}
		return resp.StatusCode, nil
	}
	return http.StatusSwitchingProtocols, ws
}
