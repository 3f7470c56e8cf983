package shim_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/frontend/shim"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/internal/testing/shimclient"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the mock claude CLI.
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

// newMockClaude is Claude Code's driver over the mock CLI in its demo
// scenario: a streamed reply, then a Write of hello.txt that asks first.
func newMockClaude() agent.Driver {
	return &claudecli.Canonical{Base: claude.Options{CLIPath: os.Args[0], ReplaceEnv: true,
		Env: map[string]string{mockclaude.EnvMain: "1", mockclaude.EnvScenario: "demo", "PATH": os.Getenv("PATH")}}}
}

const agentID = "agent-test-001"

// wait bounds every wait for an event.
const wait = 20 * time.Second

// harness is a shim over a runner core whose agent is d, on loopback.
type harness struct {
	*shimclient.Client
	shim *shim.Server
	dir  string // the workspace
	stop func()
	once sync.Once
}

func start(t *testing.T, d agent.Driver, configure func(*shim.Config)) *harness {
	t.Helper()
	return startIn(t, t.TempDir(), d, configure)
}

// startIn starts a shim over the data in dir, as tether shim does with a
// data directory: its sessions and its runs' records are kept there, so
// a shim started again on dir serves them.
func startIn(t *testing.T, dir string, d agent.Driver, configure func(*shim.Config)) *harness {
	t.Helper()
	ws, err := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{d.Name(): d}, Workspaces: ws, Log: log, Approvals: store,
		IndexDir: filepath.Join(dir, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	wsDir, err := ws.Path("project")
	if err != nil {
		t.Fatal(err)
	}
	cfg := shim.Config{Sessions: m, Agent: d.Name(), WorkspaceID: "project", Workspace: wsDir, StateFile: filepath.Join(dir, "shim-runs.json")}
	if d.Name() == "mock" { // as tether shim assembles it
		cfg.ResumeOptions = mock.ResumeOptions
	}
	if configure != nil {
		configure(&cfg)
	}
	s, err := shim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	h := &harness{shim: s}
	h.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("shim close: %v", err)
		}
		srv.CloseClientConnections()
		srv.Close()
		_ = m.Shutdown(ctx)
		_ = log.Close()
		_ = store.Close()
	}
	t.Cleanup(func() { h.Stop() })
	h.dir = wsDir
	h.Client = &shimclient.Client{T: t, Base: srv.URL, AgentID: agentID}
	return h
}

// Stop ends the shim and its core, as the process's exit does.
func (h *harness) Stop() {
	h.once.Do(h.stop)
}

// brief is a minimal valid brief, as the backend's tests send, with text
// as its description.
func brief(text string) map[string]any {
	return map[string]any{
		"agentId": agentID, "role": "test-agent", "description": text, "workstream": "testing",
		"readableWorkstreams": []string{"testing"}, "constraints": []string{},
		"escalationProtocol": map[string]any{"alwaysEscalate": []string{}, "escalateWhen": []string{}, "neverEscalate": []string{}},
		"controlMode":        "orchestrator",
		"projectBrief":       map[string]any{"title": "Test Project", "description": "A project", "goals": []string{"Ship it"}, "checkpoints": []string{"done"}},
		"knowledgeSnapshot": map[string]any{"version": 1, "generatedAt": "2025-01-01T00:00:00Z", "workstreams": []any{},
			"pendingDecisions": []any{}, "recentCoherenceIssues": []any{}, "artifactIndex": []any{}, "activeAgents": []any{}, "estimatedTokens": 0},
		"allowedTools":  []string{"file_search", "execute_code"},
		"someFutureKey": map[string]any{"ignored": true},
	}
}

func newMock() agent.Driver { return mock.New(mock.Config{}) }

func types(evs []shimclient.Envelope) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Type())
	}
	return out
}

func runsOf(evs []shimclient.Envelope) []string {
	var out []string
	for _, e := range evs {
		if len(out) == 0 || out[len(out)-1] != e.RunID {
			out = append(out, e.RunID)
		}
	}
	return out
}
