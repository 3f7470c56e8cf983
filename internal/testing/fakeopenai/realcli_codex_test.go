package fakeopenai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/testenv"
)

// codexEvent is one `codex exec --json` line; only the fields the tests
// assert on.
type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Item     struct {
		Type             string `json:"type"`
		Text             string `json:"text"`
		Command          string `json:"command"`
		AggregatedOutput string `json:"aggregated_output"`
		ExitCode         *int   `json:"exit_code"`
		Status           string `json:"status"`
	} `json:"item"`
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

func (e codexEvent) kind() string {
	if e.Item.Type != "" {
		return e.Type + "/" + e.Item.Type
	}
	return e.Type
}

// codexSession is a Codex home and working directory against one fake.
type codexSession struct {
	srv      *Server
	bin, dir string
	env      []string
}

func newCodexSession(t *testing.T) *codexSession {
	t.Helper()
	bin := testenv.RequireCodexCLI(t)
	srv, _ := startServer(t, Options{})
	// The home is under the test's temporary directory: CodexEnv's TMPDIR
	// must keep the shell tool working there.
	env, err := testenv.CodexEnv(t.TempDir(), srv.URL())
	if err != nil {
		t.Fatalf("CodexEnv: %v", err)
	}
	return &codexSession{srv: srv, bin: bin, dir: t.TempDir(), env: env}
}

// exec runs `codex exec --json` with args after the common flags.
func (s *codexSession) exec(t *testing.T, args ...string) (cliRun, []codexEvent) {
	t.Helper()
	argv := append([]string{"exec", "--json", "--skip-git-repo-check", "-m", testenv.CodexModel}, args...)
	run := runCLI(t, s.srv, s.bin, s.env, s.dir, argv...)
	evs := make([]codexEvent, len(run.lines))
	for i, l := range run.lines {
		if err := json.Unmarshal(l, &evs[i]); err != nil {
			t.Fatalf("line %s: %v", l, err)
		}
	}
	return run, evs
}

func agentMessages(evs []codexEvent) []string {
	var out []string
	for _, e := range evs {
		if e.Type == "item.completed" && e.Item.Type == "agent_message" {
			out = append(out, e.Item.Text)
		}
	}
	return out
}

func TestRealCLICodexSay(t *testing.T) {
	s := newCodexSession(t)
	run, evs := s.exec(t, "SAY hi")
	if run.exitCode != 0 {
		t.Fatalf("exit %d; stderr:\n%s", run.exitCode, run.stderr)
	}
	if got := agentMessages(evs); len(got) != 1 || got[0] != "hi" {
		t.Errorf("agent messages %q, want [hi]", got)
	}
	checkShape[codexEvent](t, run.lines, "codex-exec-say-hi.stdout.jsonl")
	if last := evs[len(evs)-1]; last.Usage == nil || last.Usage.InputTokens < 1000 || last.Usage.OutputTokens < 1 {
		t.Errorf("turn.completed usage %+v, want the fake's estimate of a ~40 KB request", last.Usage)
	}
	reqs := s.srv.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/responses" {
		t.Fatalf("requests %+v, want one POST /v1/responses", reqs)
	}
	if h := reqs[0].Header; h.Get("Authorization") != "Bearer sk-fake" || h.Get("Originator") != "codex_exec" {
		t.Errorf("headers %v", h)
	}
}

func TestRealCLICodexShell(t *testing.T) {
	s := newCodexSession(t)
	run, evs := s.exec(t, "USE_SHELL echo hello")
	if run.exitCode != 0 {
		t.Fatalf("exit %d; stderr:\n%s", run.exitCode, run.stderr)
	}
	var ran bool
	for _, e := range evs {
		if e.Type == "item.completed" && e.Item.Type == "command_execution" {
			ran = true
			if !strings.Contains(e.Item.Command, "echo hello") || e.Item.AggregatedOutput != "hello\n" ||
				e.Item.ExitCode == nil || *e.Item.ExitCode != 0 || e.Item.Status != "completed" {
				t.Errorf("command_execution %+v", e.Item)
			}
		}
	}
	if !ran {
		t.Fatalf("no completed command_execution in %s; stderr:\n%s", run.lines, run.stderr)
	}
	// Under a TMPDIR holding CODEX_HOME, Codex prints this and its sandbox
	// then cannot start (bwrap: execvp codex-linux-sandbox); CodexEnv avoids it.
	if strings.Contains(run.stderr, "Refusing to create helper binaries") {
		t.Errorf("Codex refused its helper binaries; stderr:\n%s", run.stderr)
	}
	if got := agentMessages(evs); len(got) != 1 || got[0] != "tool said: hello" {
		t.Errorf("agent messages %q, want [tool said: hello]", got)
	}
	checkShape[codexEvent](t, run.lines, "codex-exec-shell-tool.stdout.jsonl")
	// The second request carries the call and Codex's result of it.
	var body responsesRequest
	if err := json.Unmarshal(lastRequest(t, s.srv, "/v1/responses"), &body); err != nil {
		t.Fatal(err)
	}
	if n := len(body.Input); n < 2 || body.Input[n-2].Type != "function_call" || body.Input[n-1].Type != "function_call_output" {
		t.Errorf("second request does not end with the call and its output: %+v", body.Input)
	}
}

func TestRealCLICodexResume(t *testing.T) {
	s := newCodexSession(t)
	_, first := s.exec(t, "SAY one")
	thread := first[0].ThreadID
	if first[0].Type != "thread.started" || thread == "" {
		t.Fatalf("first line %+v, want thread.started with an id", first[0])
	}
	run, evs := s.exec(t, "resume", thread, "SAY two")
	if run.exitCode != 0 {
		t.Fatalf("exit %d; stderr:\n%s", run.exitCode, run.stderr)
	}
	if evs[0].ThreadID != thread {
		t.Errorf("resumed thread %q, want %q", evs[0].ThreadID, thread)
	}
	if got := agentMessages(evs); len(got) != 1 || got[0] != "two" {
		t.Errorf("agent messages %q, want [two]", got)
	}
	checkShape[codexEvent](t, run.lines, "codex-exec-resume.stdout.jsonl")
	// The resumed request re-sends the first turn before the new prompt.
	var body responsesRequest
	if err := json.Unmarshal(lastRequest(t, s.srv, "/v1/responses"), &body); err != nil {
		t.Fatal(err)
	}
	var convo []string
	for _, it := range body.Input {
		if it.Role == "user" || it.Role == "assistant" {
			convo = append(convo, it.Role+": "+it.Content.text())
		}
	}
	want := []string{"user: SAY one", "assistant: one", "user: SAY two"}
	if len(convo) < 3 || !equalTail(convo, want) {
		t.Errorf("resumed history ends %q, want %q", convo, want)
	}
}

func equalTail(got, want []string) bool {
	if len(got) < len(want) {
		return false
	}
	for i, w := range want {
		if got[len(got)-len(want)+i] != w {
			return false
		}
	}
	return true
}

func TestRealCLICodexError400(t *testing.T) {
	s := newCodexSession(t)
	run, evs := s.exec(t, "ERROR_400")
	if run.exitCode != 1 {
		t.Errorf("exit %d, want 1", run.exitCode)
	}
	last := evs[len(evs)-1]
	if last.Type != "turn.failed" || !strings.Contains(last.Error.Message, "fake error 400") {
		t.Errorf("last line %+v, want turn.failed with the fake's message", last)
	}
	checkShape[codexEvent](t, run.lines, "codex-exec-api-error-400.stdout.jsonl")
	if n := len(s.srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1: CodexEnv turns retries off", n)
	}
}
