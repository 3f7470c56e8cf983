package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakehttp"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/server"
)

// agentRunner is a real runner whose sessions API drives one agent kind,
// the real CLI against a fake model API, configured as an operator would:
// the runner's own provider configuration (Codex's CODEX_HOME, OpenCode's
// XDG config) and key in its environment.
type agentRunner struct {
	*testRunner
	api  apiClient
	kind string
	// requests are what the model API received.
	requests func() []fakehttp.Request
	// key is the model API key the runner holds, as the API sees it.
	keyHeader, key string
}

func startAgentRunner(t *testing.T, kind string, sandboxed bool, configure ...func(*server.Config)) *agentRunner {
	t.Helper()
	configureAll := func(cfg *server.Config) {
		for _, c := range configure {
			c(cfg)
		}
	}
	if kind == "claude" {
		tr := startRunnerWith(t, sandboxed, nil, configureAll)
		api := apiClient{t: t, base: "http" + strings.TrimSuffix(strings.TrimPrefix(tr.URL, "ws"), "/sessions"), token: tr.Token}
		return &agentRunner{testRunner: tr, api: api, kind: kind, requests: tr.Fake.Requests, keyHeader: "X-Api-Key", key: "sk-fake"}
	}
	cli := map[string]func(testing.TB) string{"codex": testenv.RequireCodexCLI, "opencode": testenv.RequireOpenCodeCLI}[kind](t)
	fake, err := fakeopenai.Start(fakeopenai.Options{SlowChunks: 600, SlowChunkDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	// The operator's own configuration, which the runner copies into each
	// session's home (rewritten to its key proxy when sandboxed).
	opHome := t.TempDir()
	var env []string
	switch kind {
	case "codex":
		env, err = testenv.CodexEnv(opHome, fake.URL())
	case "opencode":
		env, err = testenv.OpenCodeEnv(opHome, fake.URL(), false)
	}
	if err != nil {
		t.Fatal(err)
	}
	extra := map[string]string{}
	var pass []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "CODEX_HOME" || k == "XDG_CONFIG_HOME" || k == "OPENAI_API_KEY" || strings.HasPrefix(k, "OPENCODE_"):
			extra[k] = v
		case k == "npm_config_registry": // keeps OpenCode's plugin fetch on loopback
			extra[k] = v
			pass = append(pass, k)
		}
	}
	tr := startRunnerWith(t, sandboxed, extra, func(cfg *server.Config) {
		cfg.CLIs = map[string]string{kind: cli}
		cfg.AgentEnv = append(cfg.AgentEnv, pass...)
		configureAll(cfg)
	})
	api := apiClient{t: t, base: "http" + strings.TrimSuffix(strings.TrimPrefix(tr.URL, "ws"), "/sessions"), token: tr.Token}
	return &agentRunner{testRunner: tr, api: api, kind: kind, requests: fake.Requests, keyHeader: "Authorization", key: "Bearer sk-fake"}
}

// shell is a prompt that makes the fake model ask for cmd in the agent's
// shell tool; writeFile one that makes it change name with the agent's
// own file tool where it has one the fake drives.
func (r *agentRunner) shell(cmd string) string {
	if r.kind == "claude" {
		return bashPrompt(cmd)
	}
	return "USE_SHELL " + cmd
}

func (r *agentRunner) writeFile(name string) string {
	switch r.kind {
	case "claude":
		return "USE_WRITE " + name
	case "codex":
		return "USE_PATCH " + name + " diffed"
	}
	return r.shell("echo diffed > " + name)
}

// prompt sends text to the session and returns the turn's events.
func (r *agentRunner) turn(t *testing.T, id string, events <-chan agent.Event, text string, answer agent.Decision) []agent.Event {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	if code := r.api.call("POST", "/v1/sessions/"+id+"/prompt", string(body), nil, ""); code != 202 {
		t.Fatalf("prompt: %d", code)
	}
	var seen []agent.Event
	for {
		e := untilAny(t, events)
		seen = append(seen, e)
		switch e.Kind {
		case agent.KindApprovalRequested:
			if answer == "" {
				t.Fatalf("an approval nobody expected: %+v", e.Approval)
			}
			path := fmt.Sprintf("/v1/sessions/%s/approvals/%s/resolve", id, e.Approval.ID)
			if code := r.api.call("POST", path, `{"decision":"`+string(answer)+`"}`, nil, ""); code != 200 {
				t.Fatalf("resolve: %d", code)
			}
		case agent.KindTurnCompleted:
			return seen
		}
	}
}

// untilAny is the next valid event, within a minute.
func untilAny(t *testing.T, ch <-chan agent.Event) agent.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("%v: %+v", err, e)
		}
		return e
	case <-time.After(time.Minute):
		t.Fatal("no event for a minute")
	}
	return agent.Event{}
}

// Every agent through a runner's sessions API, sandbox on and off, the
// same journey: a text turn, a shell command approved (it ran) and denied
// (it did not), the data directory hidden by the sandbox, a file change in
// the session's diff, an interrupt, the messages, close, and a new session
// that resumes the conversation by the agent's own id (the model sees the
// first turn again). Sandboxed, no file of the agent holds the real key,
// and the model API still gets it, from the runner's key proxy.
func TestRealCLIClaudeRunner(t *testing.T)   { agentRunnerJourney(t, "claude") }
func TestRealCLICodexRunner(t *testing.T)    { agentRunnerJourney(t, "codex") }
func TestRealCLIOpenCodeRunner(t *testing.T) { agentRunnerJourney(t, "opencode") }

func agentRunnerJourney(t *testing.T, kind string) {
	timed(t)
	for _, sandboxed := range []bool{true, false} {
		t.Run(map[bool]string{true: "Sandbox", false: "NoSandbox"}[sandboxed], func(t *testing.T) {
			if sandboxed {
				requireBwrap(t)
			}
			r := startAgentRunner(t, kind, sandboxed)
			ws := newWorkspaceID(kind)
			var info sessions.Info
			if code := r.api.call("POST", "/v1/sessions", `{"agent":"`+kind+`","workspace_id":"`+ws+`"}`, &info, ""); code != 201 {
				t.Fatalf("create: %d\n%s", code, r.logs.String())
			}
			events := r.api.stream("/v1/sessions/" + info.ID + "/events")
			started := untilKind(t, events, agent.KindSessionStarted)
			if started.Session.Agent != kind || started.Session.NativeID == "" {
				t.Fatalf("session.started %+v", started.Session)
			}

			end := r.turn(t, info.ID, events, "SAY hello through the runner", "")
			if last := end[len(end)-1]; last.Turn.Status != agent.TurnCompleted || !strings.Contains(last.Turn.Text, "hello through the runner") {
				t.Fatalf("text turn: %+v %+v", last.Turn, last.Error)
			}
			for _, tc := range []struct {
				file   string
				answer agent.Decision
				status agent.ItemStatus
			}{{"allowed.txt", agent.Allow, agent.ItemDone}, {"denied.txt", agent.Deny, agent.ItemDeclined}} {
				seen := r.turn(t, info.ID, events, r.shell("touch "+tc.file), tc.answer)
				var cmd *agent.Item
				for _, e := range seen {
					if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand {
						cmd = e.Item
					}
				}
				if cmd == nil || cmd.Status != tc.status || !strings.Contains(cmd.Command.Command, "touch "+tc.file) {
					t.Fatalf("%s: command item %+v", tc.answer, cmd)
				}
				if ran := exists(filepath.Join(r.WorkspaceDir(ws), tc.file)); ran != (tc.answer == agent.Allow) {
					t.Fatalf("%s: the command ran: %v", tc.answer, ran)
				}
			}
			// The sandbox hides the runner's data directory from the agent
			// and its commands.
			seen := r.turn(t, info.ID, events, r.shell("ls -a "+r.Data), agent.Allow)
			var listing string
			for _, e := range seen {
				if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand {
					listing = e.Item.Command.Output
				}
			}
			if sees := strings.Contains(listing, "events.db"); sees == sandboxed {
				t.Fatalf("sandbox %v, the agent's ls of the data directory: %q", sandboxed, listing)
			}
			r.diffShows(t, info.ID, events)
			r.interrupt(t, info.ID, events)
			var messages struct{ Items []agent.Item }
			if code := r.api.call("GET", "/v1/sessions/"+info.ID+"/messages", "", &messages, ""); code != 200 || len(messages.Items) < 4 {
				t.Fatalf("messages: %d %+v", code, messages)
			}
			if code := r.api.call("DELETE", "/v1/sessions/"+info.ID, "", nil, ""); code != 204 {
				t.Fatalf("close: %d", code)
			}
			untilKind(t, events, agent.KindSessionEnded)

			// A new session resumes the conversation by the agent's own id.
			var resumed sessions.Info
			body := `{"agent":"` + kind + `","workspace_id":"` + ws + `","resume":"` + started.Session.NativeID + `"}`
			if code := r.api.call("POST", "/v1/sessions", body, &resumed, ""); code != 201 || resumed.NativeID != started.Session.NativeID {
				t.Fatalf("resume: %d %+v", code, resumed)
			}
			var past struct{ Items []agent.Item }
			r.api.call("GET", "/v1/sessions/"+resumed.ID+"/messages", "", &past, "")
			if !hasText(past.Items, "hello through the runner") {
				t.Fatalf("the resumed session's messages lack the first turn: %+v", past.Items)
			}
			resumedEvents := r.api.stream("/v1/sessions/" + resumed.ID + "/events")
			r.turn(t, resumed.ID, resumedEvents, "SAY again", "")
			// The past once, then the session's own turn.
			var after struct{ Items []agent.Item }
			r.api.call("GET", "/v1/sessions/"+resumed.ID+"/messages", "", &after, "")
			if n := countItems(after.Items, agent.ItemUserMessage, "hello through the runner"); n != 1 {
				t.Fatalf("the resumed session's messages hold the first prompt %d times: %+v", n, after.Items)
			}
			if n := countItems(after.Items, agent.ItemUserMessage, "SAY again"); n != 1 {
				t.Fatalf("the resumed session's messages hold its own prompt %d times: %+v", n, after.Items)
			}
			reqs := r.requests()
			if last := reqs[len(reqs)-1]; !strings.Contains(string(last.Body), "hello through the runner") {
				t.Fatalf("the model was not sent the first turn after the resume: %s", last.Body)
			}
			if code := r.api.call("DELETE", "/v1/sessions/"+resumed.ID, "", nil, ""); code != 204 {
				t.Fatalf("close the resumed session: %d", code)
			}

			models := 0
			for _, req := range r.requests() {
				if !strings.HasSuffix(req.Path, "/responses") && !strings.HasSuffix(req.Path, "/chat/completions") &&
					!strings.HasSuffix(req.Path, "/messages") {
					continue
				}
				models++
				if got := req.Header.Get(r.keyHeader); got != r.key {
					t.Fatalf("the model API got %s %q", r.keyHeader, got)
				}
			}
			if models == 0 {
				t.Fatal("the model API saw no request")
			}
			if sandboxed {
				assertNoKeyIn(t, r.HomeDir(ws), "sk-fake")
			}
		})
	}
}

// assertNoKeyIn fails when any file under dir holds key.
func assertNoKeyIn(t *testing.T, dir, key string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil // a socket or a file the agent removed meanwhile
		}
		files++
		if strings.Contains(string(data), key) {
			t.Errorf("%s holds the real key", path)
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("walk %s: %v (%d files)", dir, err, files)
	}
}

// diffShows changes a file through the agent's own file tool (Claude
// Code's Write, Codex's apply_patch) or its shell (OpenCode), allowed, and
// finds it in the session's diff.
func (r *agentRunner) diffShows(t *testing.T, id string, events <-chan agent.Event) {
	t.Helper()
	r.turn(t, id, events, r.writeFile("diffed.txt"), agent.Allow)
	var diff struct{ Changes []agent.FileChange }
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		// OpenCode writes a turn's summary just after the turn ends.
		if code := r.api.call("GET", "/v1/sessions/"+id+"/diff", "", &diff, ""); code != 200 {
			t.Fatalf("diff: %d", code)
		}
		if hasChange(diff.Changes, "diffed.txt") || time.Now().After(deadline) {
			break
		}
	}
	if !hasChange(diff.Changes, "diffed.txt") {
		t.Fatalf("the diff lacks diffed.txt: %+v", diff.Changes)
	}
}

// interrupt starts a long reply and interrupts it once it streams.
func (r *agentRunner) interrupt(t *testing.T, id string, events <-chan agent.Event) {
	t.Helper()
	if code := r.api.call("POST", "/v1/sessions/"+id+"/prompt", `{"text":"SLOW"}`, nil, ""); code != 202 {
		t.Fatalf("prompt: %d", code)
	}
	untilKind(t, events, agent.KindItemDelta)
	if code := r.api.call("POST", "/v1/sessions/"+id+"/interrupt", "", nil, ""); code != 202 && code != 200 && code != 204 {
		t.Fatalf("interrupt: %d", code)
	}
	if end := untilKind(t, events, agent.KindTurnCompleted); end.Turn.Status != agent.TurnInterrupted {
		t.Fatalf("interrupted turn: %+v %+v", end.Turn, end.Error)
	}
}

func hasChange(changes []agent.FileChange, name string) bool {
	for _, c := range changes {
		if filepath.Base(c.Path) == name {
			return true
		}
	}
	return false
}

// countItems counts the items of type typ whose text holds text.
func countItems(items []agent.Item, typ agent.ItemType, text string) int {
	n := 0
	for _, it := range items {
		if it.Type == typ && strings.Contains(it.Text, text) {
			n++
		}
	}
	return n
}

func hasText(items []agent.Item, text string) bool {
	for _, it := range items {
		if strings.Contains(it.Text, text) {
			return true
		}
	}
	return false
}
