package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/server"
)

// Without a configured token the runner generates one, keeps it in a 0600
// file in its data directory, records that file for hosts on this machine,
// refuses connections without it, logs the file but never the token, and
// uses the same token after a restart.
func TestGeneratedToken(t *testing.T) {
	r := serve(t, "text", server.Config{})
	tok := r.generated()
	path := filepath.Join(r.cfg.DataDir, auth.GeneratedTokenFile)
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 || len(tok) != 64 {
		t.Fatalf("token file: %v (mode %v), %d chars", err, info.Mode(), len(tok))
	}
	for _, bad := range []string{"", "wrong-0123456789abcdef"} {
		if _, resp, err := r.dial(bad); err == nil || status(resp) != http.StatusUnauthorized {
			t.Fatalf("token %q: %v, status %d", bad, err, status(resp))
		}
	}
	session(t, r.mustDial(tok), "w")
	// A host on this machine finds it by the runner's URL.
	if found, err := auth.LocalToken(r.cfg.RecordDir, r.url()); err != nil || found != tok {
		t.Fatalf("LocalToken: %v", err)
	}
	log := r.logs.String()
	if !strings.Contains(log, "token_file="+path) || strings.Contains(log, tok) {
		t.Fatalf("log should name the file, not the token:\n%s", log)
	}
	if err := r.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.LocalToken(r.cfg.RecordDir, r.url()); !errors.Is(err, auth.ErrNoLocalToken) {
		t.Fatalf("record left after shutdown: %v", err)
	}
	// The next start keeps the token: hosts that read it still get in.
	again := serve(t, "text", server.Config{DataDir: r.cfg.DataDir, WorkspaceRoot: r.cfg.WorkspaceRoot})
	if again.generated() != tok {
		t.Fatal("a restart changed the token")
	}
	session(t, again.mustDial(tok), "w")
}

// A token file someone changed stops the start with a typed error.
func TestGeneratedTokenFileRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, auth.GeneratedTokenFile), []byte(strings.Repeat("a", 64)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := server.Run(context.Background(), server.Config{Addr: "127.0.0.1:0", DataDir: dir, CLIPath: os.Args[0],
		Auth: auth.LoadOptions{Getenv: func(string) string { return "" }}, RecordDir: t.TempDir()})
	if !errors.Is(err, auth.ErrTokenFile) {
		t.Fatalf("err = %v", err)
	}
}

// dialHost upgrades with the given Host and Origin headers ("" for none).
func dialHost(t *testing.T, r *running, token, host, origin string) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := http.Header{"Authorization": {"Bearer " + token}}
	if origin != "" {
		h.Set("Origin", origin)
	}
	ws, resp, err := websocket.Dial(ctx, r.url(), &websocket.DialOptions{HTTPHeader: h, Host: host})
	if err == nil {
		ws.CloseNow()
		return http.StatusSwitchingProtocols, nil
	}
	return status(resp), err
}

// A loopback runner refuses a Host that is not a loopback name, even with
// an Origin that matches it (DNS rebinding), and with a valid token.
func TestLoopbackRunnerChecksHost(t *testing.T) {
	r := serve(t, "text", server.Config{})
	tok := r.generated()
	_, port, _ := net.SplitHostPort(r.addr)
	cases := []struct {
		host, origin string
		want         int
	}{
		{"evil.example:" + port, "http://evil.example:" + port, http.StatusForbidden},
		{"evil.example:" + port, "", http.StatusForbidden},
		{"127.0.0.1:" + port, "http://127.0.0.1:" + port, http.StatusSwitchingProtocols},
		{"localhost:" + port, "http://localhost:" + port, http.StatusSwitchingProtocols},
		{"", "", http.StatusSwitchingProtocols}, // the URL's own 127.0.0.1:PORT
		// The origin rule still holds: a cross-origin page is refused.
		{"127.0.0.1:" + port, "http://evil.example:" + port, http.StatusForbidden},
	}
	for _, c := range cases {
		if got, err := dialHost(t, r, tok, c.host, c.origin); got != c.want {
			t.Errorf("Host %q Origin %q: status %d (%v), want %d", c.host, c.origin, got, err, c.want)
		}
	}
	// The rebinding page of the report: no token, its own name → refused.
	if got, _ := dialHost(t, r, "", "evil.example:"+port, "http://evil.example:"+port); got != http.StatusForbidden {
		t.Errorf("rebinding without a token: %d", got)
	}
	resp, err := http.Get("http://" + r.addr + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz by its address: %v", err)
	}
	resp.Body.Close()
	if !strings.Contains(r.logs.String(), "host=evil.example:"+port) {
		t.Errorf("refused Host not logged:\n%s", r.logs.String())
	}
}

// A runner listening beyond loopback cannot know its names: any Host
// passes, and the token guards it.
func TestOpenRunnerTrustsToken(t *testing.T) {
	r := serve(t, "text", server.Config{Addr: "0.0.0.0:0", Auth: auth.LoadOptions{Tokens: []string{tokenA}}})
	_, port, _ := net.SplitHostPort(r.addr)
	r.addr = "127.0.0.1:" + port
	if got, err := dialHost(t, r, tokenA, "runner.example:"+port, "http://runner.example:"+port); got != http.StatusSwitchingProtocols {
		t.Fatalf("named Host with the token: %d (%v)", got, err)
	}
	if got, _ := dialHost(t, r, "", "runner.example:"+port, ""); got != http.StatusUnauthorized {
		t.Fatalf("named Host without the token: %d", got)
	}
}

// The log shows each session's start (id, workspace, the token's id) and
// each refused connection (401, remote address), and never a token.
func TestLogsSessionsAndRefusals(t *testing.T) {
	r := serve(t, "text", server.Config{Auth: auth.LoadOptions{Tokens: []string{tokenA}}})
	if _, resp, err := r.dial("wrong-0123456789abcdef"); err == nil || status(resp) != http.StatusUnauthorized {
		t.Fatalf("wrong token: %v", err)
	}
	ws := r.mustDial(tokenA)
	send(t, ws, map[string]any{"type": "init", "protocol_version": 1, "workspace_id": "logged"})
	ready := next(t, ws)
	id, _ := ready["session_id"].(string)
	if ready["type"] != "ready" || id == "" {
		t.Fatalf("init: %v", ready)
	}
	toks, err := auth.Load(auth.LoadOptions{Getenv: func(string) string { return "" }, Tokens: []string{tokenA}})
	if err != nil {
		t.Fatal(err)
	}
	var started, refused string
	for line := range strings.SplitSeq(r.logs.String(), "\n") {
		if strings.Contains(line, `msg="session started"`) {
			started = line
		}
		if strings.Contains(line, `msg="connection refused"`) {
			refused = line
		}
	}
	for _, want := range []string{"level=INFO", "session=" + id, "workspace=logged", "token=" + toks.IDs()[0], "remote=127.0.0.1:"} {
		if !strings.Contains(started, want) {
			t.Errorf("session start lacks %s: %q", want, started)
		}
	}
	for _, want := range []string{"level=WARN", "status=401", "remote=127.0.0.1:"} {
		if !strings.Contains(refused, want) {
			t.Errorf("refusal lacks %s: %q", want, refused)
		}
	}
	if strings.Contains(r.logs.String(), tokenA) || strings.Contains(r.logs.String(), "wrong-0123456789abcdef") {
		t.Fatalf("the log quotes a token:\n%s", r.logs.String())
	}
}

// Relative paths are resolved once, at start: the runner keeps using the
// directories it was given even if the working directory changes, and the
// workspaces default to DATA/workspaces.
func TestRelativePaths(t *testing.T) {
	start := t.TempDir()
	cli, err := filepath.Rel(start, os.Args[0])
	if err != nil || !strings.Contains(cli, "/") {
		t.Skipf("no relative path from %s to the test binary", start)
	}
	if err := os.WriteFile(filepath.Join(start, "tokens"), []byte(tokenA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(start)
	r := serve(t, "text", server.Config{DataDir: "data", CLIPath: cli, RecordDir: "records",
		Auth: auth.LoadOptions{File: "tokens"}})
	t.Chdir(t.TempDir())
	session(t, r.mustDial(tokenA), "rel")
	for _, p := range []string{"data/events.db", "data/workspaces/rel", "data/homes/rel"} {
		if _, err := os.Stat(filepath.Join(start, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// --agent-env takes names: an entry with a value is refused before the
// runner starts, without showing the value.
func TestAgentEnvTakesNames(t *testing.T) {
	called := false
	err := server.Run(context.Background(), server.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(),
		AgentEnv: []string{"PATH", "MY_KEY=s3cret-value"}, Ready: func(string) { called = true }})
	var ce *server.ConfigError
	if !errors.Is(err, server.ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field != "AgentEnv" || called {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "MY_KEY") || !strings.Contains(err.Error(), "NAMES") {
		t.Fatalf("message: %v", err)
	}
}
