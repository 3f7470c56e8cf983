package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/testing/fakeanthropic"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/shimclient"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/sandbox"
)

// The real `tether shim` binary, launched as the Project Tab backend
// launches a shim (AGENT_PORT=0, AGENT_BOOTSTRAP, the port from its
// first stdout line), driving the real CLI against a fake model API: a
// spawn whose brief makes the model run a shell command, the agent's
// permission request as a tool_approval decision, approved through
// /resolve (the command really ran in the workspace), a checkpoint
// naming the agent's own session,
// a resume through the agent's native resume (the model is sent the
// first run's conversation again), kill and respawn (with Claude Code's
// Write and Codex's patch, the written file an artifact uploaded to the
// backend first, with its content), and bad bodies. A
// client written from the backend's contract validates every event.
func TestRealCLIClaudeShim(t *testing.T)   { shimJourney(t, "claude") }
func TestRealCLICodexShim(t *testing.T)    { shimJourney(t, "codex") }
func TestRealCLIOpenCodeShim(t *testing.T) { shimJourney(t, "opencode") }

// fakeBackend is the backend's artifact route.
type fakeBackend struct {
	*httptest.Server
	mu     sync.Mutex
	posted []map[string]string
}

func startFakeBackend(t *testing.T) *fakeBackend {
	b := &fakeBackend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		if r.URL.Path != "/api/artifacts" || json.NewDecoder(r.Body).Decode(&body) != nil || body["artifactId"] == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.posted = append(b.posted, body)
		b.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"backendUri": "artifact://" + body["agentId"] + "/" + body["artifactId"],
			"artifactId": body["artifactId"], "stored": true})
	}))
	t.Cleanup(b.Close)
	return b
}

// shimRig is a `tether shim` child process for one real agent against its
// fake model API, launched as the backend launches it, with a client of
// its HTTP API and its event stream.
type shimRig struct {
	c         *shimclient.Client
	events    *shimclient.Stream
	child     *shimclient.Child
	backend   *fakeBackend
	workspace string
	requests  func() []fakehttp.Request
	base      string // holds the workspaces and the shim's data
}

const shimAgentID = "agent-e2e"

func startShimRig(t *testing.T, kind string, args ...string) *shimRig {
	clearAgentEnv(t)
	var cli string
	var env []string
	var requests func() []fakehttp.Request
	home := t.TempDir()
	switch kind {
	case "claude":
		cli = testenv.RequireClaudeCLI(t)
		fake, err := fakeanthropic.Start(fakeanthropic.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fake.Close() })
		env, requests = testenv.ClaudeEnv(home, fake.URL()), fake.Requests
	default:
		cli = map[string]func(testing.TB) string{"codex": testenv.RequireCodexCLI, "opencode": testenv.RequireOpenCodeCLI}[kind](t)
		fake, err := fakeopenai.Start(fakeopenai.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fake.Close() })
		requests = fake.Requests
		if kind == "codex" {
			env, err = testenv.CodexEnv(home, fake.URL())
		} else {
			env, err = testenv.OpenCodeEnv(home, fake.URL(), false)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	backend := startFakeBackend(t)
	boot, _ := json.Marshal(shim.Bootstrap{BackendURL: backend.URL, AgentID: shimAgentID, BackendToken: "tok",
		TokenExpiresAt: "2030-01-01T00:00:00Z", ArtifactUploadEndpoint: backend.URL + "/api/artifacts"})
	base, err := os.MkdirTemp("/var/tmp", "tether-e2e-shim-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	workspace := filepath.Join(base, "workspaces", "project")
	child := shimclient.Launch(t, env, string(boot), buildTether(t), append([]string{"shim", "--agent", kind, "--cli", cli,
		"--workspace", workspace, "--data-dir", filepath.Join(base, "data")}, args...)...)
	c := &shimclient.Client{T: t, Base: "http://localhost:" + itoa(child.Port), AgentID: shimAgentID}
	return &shimRig{c: c, events: c.Events(""), child: child, backend: backend, workspace: workspace, requests: requests, base: base}
}

// approveAll reads the run's events up to its completion, approving every
// tool call it is asked about, and returns them, the completion last.
func (r *shimRig) approveAll(timeout time.Duration) []shimclient.Envelope {
	var seen []shimclient.Envelope
	for {
		e := r.events.Next(timeout)
		seen = append(seen, e)
		switch e.Type() {
		case "decision/tool_approval":
			r.c.Must(200, "POST", "/resolve", map[string]any{"decisionId": e.Str("decisionId"),
				"resolution": map[string]any{"type": "tool_approval", "action": "approve"}}, nil)
		case "completion":
			return seen
		}
	}
}

// shimBrief is an AgentBrief whose description is the prompt.
func shimBrief(description string) map[string]any {
	return map[string]any{"agentId": shimAgentID, "role": "engineer", "description": description, "workstream": "core",
		"readableWorkstreams": []string{}, "constraints": []string{}, "controlMode": "orchestrator",
		"escalationProtocol": map[string]any{"alwaysEscalate": []string{}, "escalateWhen": []string{}, "neverEscalate": []string{}},
		"projectBrief":       map[string]any{"title": "E2E", "description": "a shim journey", "goals": []string{}, "checkpoints": []string{}},
		"knowledgeSnapshot": map[string]any{"version": 1, "generatedAt": "2025-01-01T00:00:00Z", "workstreams": []any{}, "pendingDecisions": []any{},
			"recentCoherenceIssues": []any{}, "artifactIndex": []any{}, "activeAgents": []any{}, "estimatedTokens": 0},
		"allowedTools": []string{}}
}

func shimJourney(t *testing.T, kind string) {
	timed(t)
	prompt := "USE_SHELL touch allowed.txt"
	if kind == "claude" {
		prompt = bashPrompt("touch allowed.txt")
	}
	r := startShimRig(t, kind)
	c, events, workspace, requests, backend, child := r.c, r.events, r.workspace, r.requests, r.backend, r.child
	const agentID = shimAgentID
	brief := shimBrief(prompt)
	var handle shim.AgentHandle
	c.Must(200, "POST", "/spawn", brief, &handle)
	if handle.ID != agentID || handle.Status != "running" {
		t.Fatalf("spawn reply %+v", handle)
	}
	c.Must(409, "POST", "/spawn", brief, nil)
	const long = 2 * time.Minute
	seen := events.Until("decision/tool_approval", long)
	d := seen[len(seen)-1]
	if !strings.Contains(string(mustJSON(d.Event["toolArgs"])), "touch allowed.txt") {
		t.Fatalf("decision %+v", d.Event)
	}
	if _, err := os.Stat(filepath.Join(workspace, "allowed.txt")); err == nil {
		t.Fatal("the command ran before it was approved")
	}
	var cp shim.SerializedAgentState
	c.Must(200, "POST", "/checkpoint", map[string]any{"decisionId": d.Str("decisionId")}, &cp)
	if cp.SerializedBy != "decision_checkpoint" || cp.Checkpoint.SessionID == "" || !slices.Contains(cp.PendingDecisionIDs, d.Str("decisionId")) {
		t.Fatalf("checkpoint %+v", cp)
	}
	var resolved map[string]string
	c.Must(200, "POST", "/resolve", map[string]any{"decisionId": d.Str("decisionId"),
		"resolution": map[string]any{"type": "tool_approval", "action": "approve", "actionKind": "update"}}, &resolved)
	if resolved["status"] != "resolved" {
		t.Fatalf("resolve %v", resolved)
	}
	rest := events.Until("completion", long)
	done := rest[len(rest)-1]
	if done.Str("outcome") != "success" {
		t.Fatalf("completion %+v", done.Event)
	}
	ran := slices.ContainsFunc(rest, func(e shimclient.Envelope) bool {
		return e.Type() == "tool_call" && e.Str("phase") == "completed" && e.Event["approved"] == true &&
			strings.Contains(string(mustJSON(e.Event["input"])), "touch allowed.txt")
	})
	if _, err := os.Stat(filepath.Join(workspace, "allowed.txt")); err != nil || !ran {
		t.Fatalf("the approved command did not run (%v): %s", err, mustJSON(rest))
	}

	// Resume through the agent's own session, with a new assignment.
	var paused shim.SerializedAgentState
	c.Must(200, "POST", "/pause", handle, &paused)
	if paused.SessionID != cp.Checkpoint.SessionID {
		t.Errorf("pause names session %q, the checkpoint %q", paused.SessionID, cp.Checkpoint.SessionID)
	}
	if p := events.Until("lifecycle", long); p[len(p)-1].Str("action") != "paused" {
		t.Fatalf("pause: %s", mustJSON(p))
	}
	next := brief
	next["description"] = "SAY resumed fine"
	cp.BriefSnapshot = mustJSON(next)
	before := len(requests())
	var resumed shim.AgentHandle
	c.Must(200, "POST", "/resume", cp, &resumed)
	again := events.Until("completion", long)
	if again[0].Str("action") != "resumed" || again[0].SourceSequence != 1 || again[0].RunID == d.RunID ||
		!strings.Contains(again[len(again)-1].Str("summary"), "resumed fine") {
		t.Fatalf("resumed run: %v, completion %+v", types(again), again[len(again)-1].Event)
	}
	reqs := requests()
	sawFirstTurn := false
	for _, r := range reqs[before:] {
		sawFirstTurn = sawFirstTurn || strings.Contains(string(r.Body), "allowed.txt")
	}
	if !sawFirstTurn {
		t.Errorf("the resumed conversation did not carry the first run's (native resume)")
	}
	var kill shim.KillResponse
	c.Must(200, "POST", "/kill", map[string]any{"grace": true}, &kill)
	if k := events.Until("lifecycle", long); k[len(k)-1].Str("action") != "killed" || !kill.CleanShutdown {
		t.Fatalf("kill %+v: %s", kill, mustJSON(k))
	}
	// Respawn after the kill: a new run, the agent's new session. Where
	// the fake drives the agent's own file tool, the file it writes is an
	// artifact, uploaded to the backend first.
	write := map[string]string{"claude": "USE_WRITE notes.md", "codex": "USE_PATCH notes.md diffed"}[kind]
	next["description"] = "SAY respawned"
	if write != "" {
		next["description"] = write
	}
	var respawned shim.AgentHandle
	c.Must(200, "POST", "/spawn", next, &respawned)
	third := r.approveAll(long)
	if third[0].Str("action") != "started" || third[0].SourceSequence != 1 || third[len(third)-1].Str("outcome") != "success" {
		t.Fatalf("respawn: %s", mustJSON(third))
	}
	if write == "" && !strings.Contains(third[len(third)-1].Str("summary"), "respawned") {
		t.Fatalf("respawn: %s", mustJSON(third))
	}
	if write != "" {
		i := slices.IndexFunc(third, func(e shimclient.Envelope) bool { return e.Type() == "artifact" })
		if i < 0 {
			t.Fatalf("no artifact for the written file: %s", mustJSON(third))
		}
		a := third[i]
		produced, _ := third[len(third)-1].Event["artifactsProduced"].([]any)
		if a.Str("name") != "notes.md" || a.Str("kind") != "document" || a.Str("uri") != "artifact://"+agentID+"/"+a.Str("artifactId") ||
			!slices.Contains(produced, any(a.Str("artifactId"))) {
			t.Errorf("artifact %s, produced %v", mustJSON(a.Event), produced)
		}
		written, err := os.ReadFile(filepath.Join(workspace, "notes.md"))
		if err != nil {
			t.Errorf("the written file: %v", err)
		}
		backend.mu.Lock()
		if len(backend.posted) != 1 || backend.posted[0]["artifactId"] != a.Str("artifactId") ||
			backend.posted[0]["content"] == "" || backend.posted[0]["content"] != string(written) {
			t.Errorf("uploads %v; the file holds %q", backend.posted, written)
		}
		backend.mu.Unlock()
	}
	// Bad bodies get a detail, and the shim stays healthy.
	c.Must(422, "POST", "/spawn", `{"agentId":`, nil)
	c.Must(422, "POST", "/resolve", map[string]any{"decisionId": "x", "resolution": map[string]any{"type": "maybe"}}, nil)
	c.Must(413, "POST", "/inject-context", `{"content":"`+strings.Repeat("x", shim.MaxBody)+`"}`, nil)
	c.Must(200, "GET", "/health", nil, nil)
	child.Stop(t)
	events.Close()
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func itoa(n int) string { return strconv.Itoa(n) }

func types(evs []shimclient.Envelope) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Type())
	}
	return out
}

// An agent's own question tool is an option decision of the shim (Claude
// Code's AskUserQuestion, OpenCode's question): its options as the
// backend shows them, an option that is not one refused with 422, and the
// chosen one reaching the real CLI, whose answer (the fake model echoes
// the tool's result) names it.
func TestRealCLIClaudeShimQuestion(t *testing.T)   { shimQuestion(t, "claude") }
func TestRealCLIOpenCodeShimQuestion(t *testing.T) { shimQuestion(t, "opencode") }

func shimQuestion(t *testing.T, kind string) {
	timed(t)
	r := startShimRig(t, kind)
	tool, header := "AskUserQuestion", "multiSelect"
	if kind == "opencode" {
		tool, header = "question", "multiple"
	}
	input := `{"questions":[{"question":"Which database should the service use?","header":"Database","` + header + `":false,` +
		`"options":[{"label":"Postgres","description":"relational"},{"label":"SQLite","description":"embedded"}]}]}`
	var handle shim.AgentHandle
	r.c.Must(200, "POST", "/spawn", shimBrief("USE_TOOL "+tool+" "+input), &handle)
	const long = 2 * time.Minute
	seen := r.events.Until("decision/option", long)
	d := seen[len(seen)-1]
	opts, _ := d.Event["options"].([]any)
	if d.Str("title") != "Which database should the service use?" || len(opts) != 2 {
		t.Fatalf("decision %s", mustJSON(d.Event))
	}
	second, _ := opts[1].(map[string]any)
	if second["label"] != "SQLite" {
		t.Fatalf("options %s", mustJSON(opts))
	}
	r.c.Must(422, "POST", "/resolve", map[string]any{"decisionId": d.Str("decisionId"),
		"resolution": map[string]any{"type": "option", "chosenOptionId": "nope", "actionKind": "update"}}, nil)
	r.c.Must(200, "POST", "/resolve", map[string]any{"decisionId": d.Str("decisionId"),
		"resolution": map[string]any{"type": "option", "chosenOptionId": second["id"], "actionKind": "update"}}, nil)
	rest := r.events.Until("completion", long)
	done := rest[len(rest)-1]
	if done.Str("outcome") != "success" || !strings.Contains(done.Str("summary"), `"SQLite"`) {
		t.Fatalf("completion %s", mustJSON(done.Event))
	}
	r.child.Stop(t)
	r.events.Close()
}

// With --sandbox on, the shim runs its agent as tether serve does: an
// approved shell command writes its workspace, and cannot read
// /etc/shadow, the workspace's siblings, the shim's own data or the model
// key (the agent holds a stand-in for the loopback proxy).
func TestRealCLIClaudeShimSandboxed(t *testing.T)   { shimSandboxed(t, "claude") }
func TestRealCLICodexShimSandboxed(t *testing.T)    { shimSandboxed(t, "codex") }
func TestRealCLIOpenCodeShimSandboxed(t *testing.T) { shimSandboxed(t, "opencode") }

func shimSandboxed(t *testing.T, kind string) {
	timed(t)
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	r := startShimRig(t, kind, "--sandbox", "on")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the shim's stderr:\n%s", r.child.Stderr())
		}
	})
	sibling := filepath.Join(r.base, "workspaces", "other")
	if err := os.MkdirAll(sibling, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sibling, "secret.txt"), []byte("sibling-secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(r.base, "data")
	command := "cat /etc/shadow; cat " + filepath.Join(sibling, "secret.txt") + "; ls " + data +
		"; printenv ANTHROPIC_API_KEY OPENAI_API_KEY; echo inside > sandboxed.txt; echo done"
	prompt := "USE_SHELL " + command
	if kind == "claude" {
		prompt = bashPrompt(command)
	}
	r.c.Must(200, "POST", "/spawn", shimBrief(prompt), nil)
	// OpenCode asks for the directories outside its project first, then
	// for the command.
	var output string
	for _, e := range r.approveAll(2 * time.Minute) {
		if e.Type() == "tool_call" && e.Str("phase") == "completed" {
			output += string(mustJSON(e.Event["output"])) // {"stdout":…,"exit_code":…}
		}
	}
	if got, err := os.ReadFile(filepath.Join(r.workspace, "sandboxed.txt")); err != nil || string(got) != "inside\n" {
		t.Fatalf("the approved command did not write its workspace (%v); output %q", err, output)
	}
	if !strings.Contains(output, "done") {
		t.Fatalf("no output of the command: %q", output)
	}
	for _, leak := range []string{"root:", "sibling-secret", "events.db", "approvals.db", "sk-fake"} {
		if strings.Contains(output, leak) {
			t.Fatalf("the sandboxed command saw %q:\n%s", leak, output)
		}
	}
}
