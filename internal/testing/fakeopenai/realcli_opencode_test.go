package fakeopenai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/testenv"
)

// openCodeEvent is one `opencode run --format json` line; only the fields
// the tests assert on.
type openCodeEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Tool   string `json:"tool"`
		Reason string `json:"reason"`
		State  struct {
			Status string          `json:"status"`
			Input  json.RawMessage `json:"input"`
			Output string          `json:"output"`
		} `json:"state"`
	} `json:"part"`
	Error struct {
		Name string `json:"name"`
		Data struct {
			Message     string `json:"message"`
			StatusCode  int    `json:"statusCode"`
			IsRetryable bool   `json:"isRetryable"`
		} `json:"data"`
	} `json:"error"`
}

func (e openCodeEvent) kind() string {
	if e.Part.Type != "" {
		return e.Type + "/" + e.Part.Type
	}
	return e.Type
}

// openCodeSession is an OpenCode home and working directory against one fake.
type openCodeSession struct {
	srv      *Server
	bin, dir string
	env      []string
}

func newOpenCodeSession(t *testing.T) *openCodeSession {
	t.Helper()
	bin := testenv.RequireOpenCodeCLI(t)
	srv, _ := startServer(t, Options{})
	env, err := testenv.OpenCodeEnv(t.TempDir(), srv.URL(), false)
	if err != nil {
		t.Fatalf("OpenCodeEnv: %v", err)
	}
	// Besides the model calls, only the npm registry request OpenCodeEnv
	// routes to the fake (GET /npm/@opencode-ai/plugin) may arrive.
	t.Cleanup(func() {
		for _, r := range srv.Requests() {
			if !(r.Method == "POST" && r.Path == "/v1/chat/completions") && !(r.Method == "GET" && strings.HasPrefix(r.Path, "/npm/")) {
				t.Errorf("unexpected request %s %s", r.Method, r.Path)
			}
		}
	})
	return &openCodeSession{srv: srv, bin: bin, dir: t.TempDir(), env: env}
}

// run runs `opencode run --format json` with args after the common flags.
func (s *openCodeSession) run(t *testing.T, args ...string) (cliRun, []openCodeEvent) {
	t.Helper()
	argv := append([]string{"run", "--format", "json"}, args...)
	run := runCLI(t, s.srv, s.bin, s.env, s.dir, argv...)
	evs := make([]openCodeEvent, len(run.lines))
	for i, l := range run.lines {
		if err := json.Unmarshal(l, &evs[i]); err != nil {
			t.Fatalf("line %s: %v", l, err)
		}
	}
	return run, evs
}

func texts(evs []openCodeEvent) []string {
	var out []string
	for _, e := range evs {
		if e.Type == "text" {
			out = append(out, e.Part.Text)
		}
	}
	return out
}

// chatRequests decodes every Chat Completions request the fake received.
func chatRequests(t *testing.T, srv *Server) []chatRequest {
	t.Helper()
	var out []chatRequest
	for _, r := range srv.Requests() {
		if r.Method != "POST" || r.Path != "/v1/chat/completions" {
			continue
		}
		var c chatRequest
		if err := json.Unmarshal(r.Body, &c); err != nil {
			t.Fatalf("request body: %v", err)
		}
		out = append(out, c)
	}
	return out
}

func TestRealCLIOpenCodeSay(t *testing.T) {
	s := newOpenCodeSession(t)
	run, evs := s.run(t, "SAY hi")
	if run.exitCode != 0 {
		t.Fatalf("exit %d; stderr:\n%s", run.exitCode, run.stderr)
	}
	if got := texts(evs); len(got) != 1 || got[0] != "hi" {
		t.Errorf("texts %q, want [hi]", got)
	}
	checkShape[openCodeEvent](t, run.lines, "opencode-run-say-hi.stdout.jsonl")
	// One title request (no tools) and the agent's request, both with the
	// prompt JSON-quoted.
	var titles, turns int
	for _, c := range chatRequests(t, s.srv) {
		tn := c.turn()
		if tn.prompt != "SAY hi" {
			t.Errorf("request prompt %q", tn.prompt)
		}
		if tn.title {
			titles++
		} else {
			turns++
		}
	}
	if titles != 1 || turns != 1 {
		t.Errorf("%d title and %d agent requests, want 1 and 1", titles, turns)
	}
}

func TestRealCLIOpenCodeShell(t *testing.T) {
	s := newOpenCodeSession(t)
	run, evs := s.run(t, "--auto", "USE_SHELL echo hello")
	if run.exitCode != 0 {
		t.Fatalf("exit %d; stderr:\n%s", run.exitCode, run.stderr)
	}
	var ran bool
	for _, e := range evs {
		if e.Type == "tool_use" {
			ran = true
			var in struct{ Command string }
			_ = json.Unmarshal(e.Part.State.Input, &in)
			if e.Part.Tool != "bash" || e.Part.State.Status != "completed" || e.Part.State.Output != "hello\n" || in.Command != "echo hello" {
				t.Errorf("tool_use %+v input %s", e.Part, e.Part.State.Input)
			}
		}
	}
	if !ran {
		t.Fatalf("no tool_use in %s; stderr:\n%s", run.lines, run.stderr)
	}
	if got := texts(evs); len(got) != 1 || got[0] != "tool said: hello" {
		t.Errorf("texts %q, want [tool said: hello]", got)
	}
	checkShape[openCodeEvent](t, run.lines, "opencode-run-auto-shell-tool.stdout.jsonl")
}

func TestRealCLIOpenCodeResume(t *testing.T) {
	s := newOpenCodeSession(t)
	_, first := s.run(t, "SAY one")
	session := first[0].SessionID
	if session == "" {
		t.Fatalf("first line %+v has no session id", first[0])
	}
	run, evs := s.run(t, "-s", session, "SAY two")
	if run.exitCode != 0 {
		t.Fatalf("exit %d; stderr:\n%s", run.exitCode, run.stderr)
	}
	for _, e := range evs {
		if e.SessionID != session {
			t.Errorf("line in session %q, want %q", e.SessionID, session)
		}
	}
	if got := texts(evs); len(got) != 1 || got[0] != "two" {
		t.Errorf("texts %q, want [two]", got)
	}
	checkShape[openCodeEvent](t, run.lines, "opencode-run-resume.stdout.jsonl")
	// The resumed turn re-sends the first one.
	reqs := chatRequests(t, s.srv)
	var convo []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "user" || m.Role == "assistant" {
			convo = append(convo, m.Role+": "+unquote(m.Content.text()))
		}
	}
	want := []string{"user: SAY one", "assistant: one", "user: SAY two"}
	if !equalTail(convo, want) {
		t.Errorf("resumed history %q, want it to end %q", convo, want)
	}
}

func TestRealCLIOpenCodeError400(t *testing.T) {
	s := newOpenCodeSession(t)
	run, evs := s.run(t, "ERROR_400")
	if run.exitCode == 0 {
		t.Errorf("exit 0, want failure")
	}
	var found bool
	for _, e := range evs {
		if e.Type == "error" {
			found = true
			if e.Error.Name != "APIError" || e.Error.Data.StatusCode != 400 || e.Error.Data.IsRetryable || e.Error.Data.Message != "fake error 400" {
				t.Errorf("error %+v", e.Error)
			}
		}
	}
	if !found {
		t.Errorf("no error line in %s", run.lines)
	}
	checkShape[openCodeEvent](t, run.lines, "opencode-run-api-error-400.stdout.jsonl")
}
