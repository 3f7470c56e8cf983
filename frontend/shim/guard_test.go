package shim_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/runner/auth"
)

const testToken = "shim-test-token-0123456789"

// raw sends one request as whatever sent it would: the headers given,
// nothing added but what net/http must. It returns the status and the
// {"detail"} of the reply.
func raw(t *testing.T, method, rawURL, host string, hdr http.Header, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(data)
}

// dial opens WS /events with the headers given; the status of the
// handshake, and the connection when it opened.
func dial(t *testing.T, base, query, host string, hdr http.Header) (int, *websocket.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	u := "ws" + strings.TrimPrefix(base, "http") + "/events"
	if query != "" {
		u += "?" + query
	}
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: hdr, Host: host})
	if err != nil {
		if resp == nil {
			t.Fatalf("dial %s: %v", u, err)
		}
		return resp.StatusCode, nil
	}
	t.Cleanup(func() { ws.CloseNow() })
	return http.StatusSwitchingProtocols, ws
}

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }

func with(h http.Header, kv ...string) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}

// What a web page can send the shim is refused before any handler runs:
// a Host that is not a loopback name (a name rebound to 127.0.0.1), an
// Origin header or a Sec-Fetch-Site of another site (a page's fetch or
// WebSocket), a body not declared application/json (a text/plain POST
// needs no preflight). The backend's own requests go through.
func TestGuardRefusesWebPages(t *testing.T) {
	h := start(t, newMock(), nil)
	port := h.Base[strings.LastIndex(h.Base, ":")+1:]
	spawn := `{"agentId":"` + agentID + `","description":"hello"}`
	for _, tc := range []struct {
		name   string
		host   string
		hdr    http.Header
		body   string
		status int
	}{
		{"rebound Host", "evil.example:" + port, jsonHeader(), spawn, 403},
		{"rebound Host, no port", "evil.example", jsonHeader(), spawn, 403},
		{"a name ending in localhost", "localhost.evil.example:" + port, jsonHeader(), spawn, 403},
		{"Origin", "", with(jsonHeader(), "Origin", "http://127.0.0.1:1"), spawn, 403},
		{"Origin null", "", with(jsonHeader(), "Origin", "null"), spawn, 403},
		{"Sec-Fetch-Site cross-site", "", with(jsonHeader(), "Sec-Fetch-Site", "cross-site"), spawn, 403},
		{"Sec-Fetch-Site same-site", "", with(jsonHeader(), "Sec-Fetch-Site", "same-site"), spawn, 403},
		{"text/plain", "", http.Header{"Content-Type": {"text/plain;charset=UTF-8"}}, spawn, 415},
		{"form", "", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, spawn, 415},
		{"no Content-Type", "", nil, spawn, 415},
		{"text/plain and no body", "", http.Header{"Content-Type": {"text/plain"}}, "", 415},
	} {
		status, body := raw(t, "POST", h.Base+"/spawn", tc.host, tc.hdr, tc.body)
		if status != tc.status || !strings.Contains(body, `"detail"`) {
			t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.status)
		}
	}
	for _, tc := range []struct {
		name string
		host string
		hdr  http.Header
	}{
		{"rebound Host", "evil.example:" + port, nil},
		{"Origin", "", http.Header{"Origin": {"http://127.0.0.1:1"}}},
		{"Sec-Fetch-Site", "", http.Header{"Sec-Fetch-Site": {"cross-site"}}},
	} {
		if status, _ := dial(t, h.Base, "", tc.host, tc.hdr); status != 403 {
			t.Errorf("WS /events, %s: %d, want 403", tc.name, status)
		}
	}
	var health shim.Health
	h.Must(200, "GET", "/health", nil, &health)
	if health.AgentStatus != shim.StatusDone {
		t.Fatalf("a refused spawn started a run: %s", health.AgentStatus)
	}

	// The backend's own: loopback names, JSON (with a charset too), no
	// body where there is nothing to say, Sec-Fetch-Site none (a URL typed
	// in a browser's address bar).
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "LOCALHOST:" + port, "127.0.0.2:" + port} {
		if status, body := raw(t, "GET", h.Base+"/health", host, nil, ""); status != 200 {
			t.Errorf("Host %s: %d %s", host, status, body)
		}
	}
	if status, body := raw(t, "GET", h.Base+"/health", "", http.Header{"Sec-Fetch-Site": {"none"}}, ""); status != 200 {
		t.Errorf("Sec-Fetch-Site none: %d %s", status, body)
	}
	if status, _ := dial(t, h.Base, "", "localhost:"+port, nil); status != 101 {
		t.Errorf("WS /events as the backend: %d", status)
	}
	events := h.Events("")
	if status, body := raw(t, "POST", h.Base+"/spawn", "", http.Header{"Content-Type": {"application/json; charset=utf-8"}}, spawn); status != 200 {
		t.Fatalf("the backend's spawn: %d %s", status, body)
	}
	events.Until("completion", wait)
	if status, body := raw(t, "POST", h.Base+"/pause", "", nil, ""); status != 200 {
		t.Errorf("a POST without a body: %d %s", status, body)
	}
}

// With a token, every request must carry it, as a bearer, or as ?token=
// on WS /events; compared whole (a prefix or another token is refused).
func TestGuardToken(t *testing.T) {
	h := start(t, newMock(), func(c *shim.Config) { c.Token = testToken })
	bearer := func(tok string) http.Header { return with(jsonHeader(), "Authorization", "Bearer "+tok) }
	for _, tc := range []struct {
		name   string
		hdr    http.Header
		status int
	}{
		{"none", jsonHeader(), 401},
		{"wrong", bearer("shim-test-token-0123456780"), 401},
		{"a prefix", bearer(testToken[:20]), 401},
		{"longer", bearer(testToken + "x"), 401},
		{"basic", with(jsonHeader(), "Authorization", "Basic "+testToken), 401},
		{"right", bearer(testToken), 200},
		{"right, scheme in lower case", with(jsonHeader(), "Authorization", "bearer "+testToken), 200},
	} {
		status, body := raw(t, "GET", h.Base+"/health", "", tc.hdr, "")
		if status != tc.status {
			t.Errorf("token %s: %d %s, want %d", tc.name, status, body, tc.status)
		}
	}
	if status, _ := raw(t, "GET", h.Base+"/health?token="+testToken, "", nil, ""); status != 401 {
		t.Errorf("?token= on /health: %d, want 401 (only /events takes it)", status)
	}
	status, body := raw(t, "POST", h.Base+"/spawn", "", jsonHeader(), `{"agentId":"`+agentID+`"}`)
	if status != 401 {
		t.Errorf("spawn without the token: %d %s", status, body)
	}
	for _, tc := range []struct {
		name   string
		query  string
		hdr    http.Header
		status int
	}{
		{"none", "", nil, 401},
		{"wrong query", "token=nope-nope-nope-nope", nil, 401},
		{"query", "token=" + url.QueryEscape(testToken), nil, 101},
		{"bearer", "", http.Header{"Authorization": {"Bearer " + testToken}}, 101},
	} {
		if status, _ := dial(t, h.Base, tc.query, "", tc.hdr); status != tc.status {
			t.Errorf("WS /events, token %s: %d, want %d", tc.name, status, tc.status)
		}
	}
	h.Token = testToken
	var health shim.Health
	h.Must(200, "GET", "/health", nil, &health)
	if health.AgentStatus != shim.StatusDone {
		t.Errorf("a spawn without the token started a run: %s", health.AgentStatus)
	}
}

// A Host naming the host the shim was told it listens on, or the address
// a connection came in on, is the shim's own; any other name is not.
func TestGuardOwnAddresses(t *testing.T) {
	h := start(t, newMock(), func(c *shim.Config) { c.Token, c.ListenHost = testToken, "shim.internal" })
	handler := h.shim.Handler()
	for _, tc := range []struct {
		host, local string
		status      int
	}{
		{"shim.internal:9100", "10.1.2.3:9100", 200},
		{"SHIM.internal", "10.1.2.3:9100", 200},
		{"10.1.2.3:9100", "10.1.2.3:9100", 200},
		{"10.1.2.3:80", "10.1.2.3:9100", 200},
		{"[fd00::1]:9100", "[fd00::1]:9100", 200},
		{"10.1.2.4:9100", "10.1.2.3:9100", 403},
		{"evil.example:9100", "10.1.2.3:9100", 403},
		{"0.0.0.0:9100", "127.0.0.1:9100", 403},
		{"", "10.1.2.3:9100", 403}, // HTTP/1.0 may send none
	} {
		local, err := net.ResolveTCPAddr("tcp", tc.local)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequestWithContext(context.WithValue(context.Background(), http.LocalAddrContextKey, local), "GET", "/health", nil)
		req.Host = tc.host
		req.Header.Set("Authorization", "Bearer "+testToken)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("Host %s arriving at %s: %d %s, want %d", tc.host, tc.local, rec.Code, rec.Body, tc.status)
		}
	}
}

// WS /events serves MaxSubscribers clients at once; one more is refused
// with 503 (1,000 were accepted), and a place freed is taken again.
func TestGuardCapsSubscribers(t *testing.T) {
	h := start(t, newMock(), func(c *shim.Config) { c.MaxSubscribers = 3 })
	var open []*websocket.Conn
	for range 3 {
		status, ws := dial(t, h.Base, "", "", nil)
		if status != 101 {
			t.Fatalf("subscriber %d: %d", len(open)+1, status)
		}
		open = append(open, ws)
	}
	if status, _ := dial(t, h.Base, "", "", nil); status != 503 {
		t.Fatalf("a fourth subscriber: %d, want 503", status)
	}
	if status, body := raw(t, "GET", h.Base+"/events", "", nil, ""); status != 503 || !strings.Contains(body, "too many event streams") {
		t.Fatalf("a fourth subscriber: %d %s", status, body)
	}
	_ = open[0].Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(wait)
	for { // the place is free once the shim has seen the close
		status, _ := dial(t, h.Base, "", "", nil)
		if status == 101 {
			break
		}
		if status != 503 || time.Now().After(deadline) {
			t.Fatalf("after a close: %d", status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A token is checked as the runner's are, given once (the bootstrap's
// and the environment's must agree), and needed beyond loopback.
func TestGuardConfiguration(t *testing.T) {
	if _, _, err := shim.ResolveToken(shim.Bootstrap{ShimToken: "short"}, ""); !errors.Is(err, auth.ErrInvalidToken) ||
		!strings.Contains(err.Error(), "AGENT_BOOTSTRAP shimToken") || strings.Contains(err.Error(), "short ") {
		t.Errorf("a short token: %v", err)
	}
	if _, _, err := shim.ResolveToken(shim.Bootstrap{ShimToken: testToken}, testToken+"2"); !errors.Is(err, shim.ErrTokenConflict) {
		t.Errorf("two tokens: %v", err)
	}
	if tok, source, err := shim.ResolveToken(shim.Bootstrap{}, testToken); err != nil || tok != testToken || source != shim.EnvToken {
		t.Errorf("the environment's: %q %q %v", tok, source, err)
	}
	if tok, _, err := shim.ResolveToken(shim.Bootstrap{BackendToken: testToken}, ""); err != nil || tok != "" {
		t.Errorf("the backend's own token is not the shim's: %q %v", tok, err)
	}
	for _, host := range []string{"127.0.0.1", "localhost", "::1", "127.1.2.3"} {
		if err := shim.CheckListen(host, ""); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	for _, host := range []string{"0.0.0.0", "::", "", "10.1.2.3", "shim.internal"} {
		if err := shim.CheckListen(host, ""); !errors.Is(err, shim.ErrTokenRequired) || !strings.Contains(err.Error(), shim.EnvToken) {
			t.Errorf("%q without a token: %v", host, err)
		}
		if err := shim.CheckListen(host, testToken); err != nil {
			t.Errorf("%q with a token: %v", host, err)
		}
	}
}
