package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// httpDo makes one request with token and returns status and body.
func httpDo(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// A runner with a token and model keys in its environment logs one JSON
// line per session start and end, and per error, with session and agent
// ids, and never the token or a key, whatever happens: sessions of two
// agents, an agent that crashes, a wrong token, a shutdown.
func TestServeJSONLogsNameSessionsAndNoSecrets(t *testing.T) {
	const (
		token     = "log-test-token-5f0c9e2a7b41d8e3a6c0"
		modelKey  = "sk-ant-api03-logtest-9b7e5d3c1a0f2e4d6c8b"
		openAIKey = "sk-proj-logtest-1a2b3c4d5e6f7a8b9c0d"
	)
	env := cleanEnv("TETHER_AUTH_TOKEN="+token, "ANTHROPIC_API_KEY="+modelKey, "OPENAI_API_KEY="+openAIKey,
		"XDG_RUNTIME_DIR="+t.TempDir())
	p := startServe(t, env, "--log-format", "json", "--log-level", "debug", "--cli", "claude="+mockCLI(t, "crash", 0))
	base := "http://" + p.addr

	if code, body := httpDo(t, "GET", base+"/v1/sessions", "wrong-token-00000000000000000", ""); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d %s", code, body)
	}
	ids := map[string]string{}
	for _, agentName := range []string{"mock", "claude"} {
		code, body := httpDo(t, "POST", base+"/v1/sessions", token,
			`{"agent":"`+agentName+`","workspace_id":"w-`+agentName+`","prompt":"hello"}`)
		if code >= 300 {
			t.Fatalf("create %s: %d %s", agentName, code, body)
		}
		var info struct{ ID string }
		_ = json.Unmarshal([]byte(body), &info)
		ids[agentName] = info.ID
	}
	// The mock's turn completes; the claude CLI crashes (exit 3) in its.
	deadline := time.Now().Add(waitLimit)
	for {
		_, body := httpDo(t, "GET", base+"/v1/sessions/"+ids["claude"], token, "")
		if strings.Contains(body, `"state":"ended"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the crashing session did not end: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(waitLimit):
		t.Fatal("tether serve did not exit after SIGTERM")
	}

	type record struct {
		Level, Msg, Session, Agent string
	}
	var recs []record
	for _, line := range p.lines() {
		for _, secret := range []string{token, modelKey, openAIKey} {
			if strings.Contains(line, secret) {
				t.Errorf("a log line holds a secret (%.6s…): %s", secret, line)
			}
		}
		var rec record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON line: %q", line)
			continue
		}
		recs = append(recs, rec)
	}
	has := func(level, msg, agentName string) bool {
		for _, r := range recs {
			if r.Level == level && r.Msg == msg && r.Agent == agentName && r.Session == ids[agentName] {
				return true
			}
		}
		return false
	}
	for _, want := range []struct{ level, msg, agent string }{
		{"INFO", "session started", "mock"}, {"INFO", "session ended", "mock"},
		{"INFO", "session started", "claude"}, {"ERROR", "session ended", "claude"},
	} {
		if !has(want.level, want.msg, want.agent) {
			t.Errorf("no %s %q line for the %s session %s:\n%s", want.level, want.msg, want.agent, ids[want.agent],
				strings.Join(p.lines(), "\n"))
		}
	}
	if len(recs) < 6 {
		t.Errorf("only %d log lines", len(recs))
	}
}

func TestServeRejectsBadLogFlags(t *testing.T) {
	for _, args := range [][]string{{"--log-format", "xml"}, {"--log-level", "loud"}} {
		r := tether(t, t.TempDir(), "", cleanEnv(), append([]string{"serve", "--data", t.TempDir()}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, args[0]) {
			t.Errorf("serve %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}
