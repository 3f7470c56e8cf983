package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The sessions commands against a real `tether serve` (the mock agent): a
// session created over the API waits for an approval; `approvals` lists
// it, `deny` answers it, a second `approve` is told who was first,
// `attach` shows the session to its end, and `sessions` lists it.
func TestSessionsCommandsAgainstServe(t *testing.T) {
	p := startServe(t, cleanEnv(), "--cli", mockCLI(t, "demo", 0))
	runner := "http://" + p.addr
	api := []string{"--runner", runner, "--runner-token", testToken}
	r := tether(t, t.TempDir(), "", cleanEnv(), append([]string{"sessions"}, api...)...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "SESSION") {
		t.Fatalf("sessions: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := createSession(t, runner)

	var approvals []struct {
		ID        string `json:"id"`
		SessionID string `json:"session_id"`
	}
	for deadline := time.Now().Add(20 * time.Second); len(approvals) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no approval listed")
		}
		r = tether(t, t.TempDir(), "", cleanEnv(), append([]string{"approvals", "--json"}, api...)...)
		if err := json.Unmarshal([]byte(r.stdout), &approvals); err != nil {
			t.Fatalf("approvals --json: %v\n%s", err, r.stdout)
		}
	}
	a := approvals[0]
	if a.SessionID != id {
		t.Fatalf("approval of session %s, want %s", a.SessionID, id)
	}
	r = tether(t, t.TempDir(), "", cleanEnv(), append([]string{"deny", id, a.ID, "--reason", "not today"}, api...)...)
	if r.code != 0 || r.stdout != "denied "+a.ID+"\n" {
		t.Fatalf("deny: %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = tether(t, t.TempDir(), "", cleanEnv(), append([]string{"approve", id, a.ID}, api...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "was already answered: deny by ") {
		t.Fatalf("approve after deny: %d %q", r.code, r.stderr)
	}
	r = tether(t, t.TempDir(), "", cleanEnv(), append([]string{"attach", id, "--until-turn-end"}, api...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "> hello") || !strings.Contains(r.stdout, "[declined]") || !strings.Contains(r.stdout, "✓ completed") {
		t.Fatalf("attach: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = tether(t, t.TempDir(), "", cleanEnv(), append([]string{"sessions"}, api...)...)
	if r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Fatalf("sessions: %d\n%s", r.code, r.stdout)
	}
	r = tether(t, t.TempDir(), "", cleanEnv(), "sessions", "--runner", runner, "--runner-token", "wrong-token-wrong-token")
	if r.code != 1 || !strings.Contains(r.stderr, "401") {
		t.Fatalf("a wrong token: %d %q", r.code, r.stderr)
	}
}

// createSession starts a session with a prompt through the API.
func createSession(t *testing.T, runner string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", runner+"/v1/sessions", strings.NewReader(`{"agent":"claude","workspace_id":"w1","prompt":"hello"}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %d %v", resp.StatusCode, err)
	}
	return s.ID
}

// tether run --agent mock --runner: one turn on a runner through its
// sessions API, from the protocol v1 URL a Claude host would give; the
// approval answered by --approve (allowed, then denied in a second run),
// --json prints the canonical events, and the session is closed after.
func TestRunAgentOnRunner(t *testing.T) {
	p := startServe(t, cleanEnv(), "--cli", mockCLI(t, "demo", 0))
	run := func(args ...string) result {
		base := []string{"run", "--agent", "mock", "--runner", "ws://" + p.addr + "/sessions", "--runner-token", testToken}
		return tether(t, t.TempDir(), "", cleanEnv(), append(base, args...)...)
	}
	r := run("--approve", "allow", "--workspace", "remote-a", "REQUEST_APPROVAL please")
	if r.code != 0 || !strings.Contains(r.stdout, "mock_search") || strings.Contains(r.stdout, "[declined]") ||
		!strings.Contains(r.stderr, "resume with --resume") {
		t.Fatalf("allow: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run("--approve", "deny", "--workspace", "remote-b", "REQUEST_APPROVAL please")
	if r.code != 0 || !strings.Contains(r.stdout, "[declined]") {
		t.Fatalf("deny: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run("--json", "--approve", "allow", "--workspace", "remote-c", "hello")
	kinds := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e struct{ Kind string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		kinds[e.Kind] = true
	}
	if r.code != 0 || !kinds["turn.started"] || !kinds["item.completed"] || !kinds["turn.completed"] {
		t.Fatalf("--json: %d %v\n%s", r.code, kinds, r.stderr)
	}
	// Every session the runs opened is closed.
	req, _ := http.NewRequest("GET", "http://"+p.addr+"/v1/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Sessions []struct{ Agent, State string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Sessions) != 3 {
		t.Fatalf("sessions %+v %v", list, err)
	}
	for _, s := range list.Sessions {
		if s.Agent != "mock" || s.State != "ended" {
			t.Fatalf("session left %+v", s)
		}
	}
	if r := run("--cwd", "x", "hello"); r.code != 2 || !strings.Contains(r.stderr, "drop --cwd") {
		t.Fatalf("--cwd on a runner: %d %s", r.code, r.stderr)
	}
}
