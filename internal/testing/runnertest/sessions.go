package runnertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/frontend/sessionsapi"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// MockClaude is Claude Code as an agent.Driver played by the mock CLI in
// scenario: the test binary itself, whose TestMain must call
// mockclaude.Main when mockclaude.EnvMain is "1".
func MockClaude(scenario string) agent.Driver {
	return &claudecli.Canonical{Base: claude.Options{CLIPath: os.Args[0], ReplaceEnv: true,
		Env: map[string]string{mockclaude.EnvMain: "1", mockclaude.EnvScenario: scenario, "PATH": os.Getenv("PATH")}}}
}

// Manager is a sessions core on t's temp directory with drivers and the
// event log's opts; it shuts down and closes with the test.
func Manager(t testing.TB, drivers map[string]agent.Driver, opts eventlog.Options) *sessions.Manager {
	t.Helper()
	return ManagerWith(t, drivers, opts, nil)
}

// ManagerWith is Manager with its configuration passed through adjust
// first (nil: as it is), such as a log or an observer that wraps the
// ones it opened.
func ManagerWith(t testing.TB, drivers map[string]agent.Driver, opts eventlog.Options, adjust func(*sessions.Config)) *sessions.Manager {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), nil)
	if err != nil {
		_ = log.Close()
		t.Fatal(err)
	}
	cfg := sessions.Config{Drivers: drivers, Workspaces: ws, Log: log, Approvals: store}
	if adjust != nil {
		adjust(&cfg)
	}
	m, err := sessions.New(cfg)
	if err != nil {
		_ = log.Close()
		_ = store.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = m.Shutdown(ctx)
		_ = log.Close()
		_ = store.Close()
	})
	return m
}

// SessionsAPI serves the sessions API on loopback over a sessions core
// on t's temp directory with drivers, and returns its base URL; everything
// ends with the test.
func SessionsAPI(t testing.TB, drivers map[string]agent.Driver) string {
	t.Helper()
	m := Manager(t, drivers, eventlog.Options{})
	// The X-Test-User header stands in for the token's name.
	srv := httptest.NewUnstartedServer(sessionsapi.Handler(sessionsapi.Config{Sessions: m,
		By: func(r *http.Request) string { return r.Header.Get("X-Test-User") }}))
	srv.Config.ConnContext = sessionsapi.ConnContext
	srv.Start()
	t.Cleanup(srv.Close) // before the core's cleanup: cleanups run last first
	return srv.URL
}
