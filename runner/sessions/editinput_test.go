package sessions_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/runner/approvals"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/runner/workspace"
)

// An allow's edited input is refused, with the approval left open, when
// it is not a JSON object, or when the session's agent would not take it
// (it would run the call as the model asked it).
func TestEditedInputIsRefusedWhereItWouldNotApply(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.New(filepath.Join(dir, "workspaces"), workspace.Options{HomesRoot: filepath.Join(dir, "homes")})
	if err != nil {
		t.Fatal(err)
	}
	log, err := eventlog.Open(filepath.Join(dir, "events.db"), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	store, err := approvals.Open(filepath.Join(dir, "approvals.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m, err := sessions.New(sessions.Config{Drivers: map[string]agent.Driver{"mock": mock.New(mock.Config{})}, Workspaces: ws, Log: log, Approvals: store})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(ctx(t))
	info, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "mock", WorkspaceID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	live := follow(t, m, info.ID, 0)
	if err := m.Prompt(ctx(t), info.ID, agent.Prompt{Text: "REQUEST_APPROVAL"}); err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	asked := until(t, live, agent.KindApprovalRequested, &seen)
	allow := agent.Resolution{ApprovalID: asked.Approval.ID, Decision: agent.Allow, Input: json.RawMessage(`["not", "an", "object"]`)}
	var invalid *agent.InvalidEventError
	if _, err := m.Resolve(ctx(t), info.ID, allow); !errors.As(err, &invalid) {
		t.Errorf("an input that is no object: %v", err)
	}
	allow.Input = json.RawMessage(`{"query": "edited"}`)
	var unsupported *agent.UnsupportedError
	if _, err := m.Resolve(ctx(t), info.ID, allow); !errors.As(err, &unsupported) {
		t.Errorf("an input the mock does not take: %v", err)
	}
	allow.Input = nil
	if _, err := m.Resolve(ctx(t), info.ID, allow); err != nil {
		t.Errorf("the approval did not stay open: %v", err)
	}
}
