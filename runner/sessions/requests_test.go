package sessions_test

import (
	"errors"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

// Each turn.started in the log carries the RequestID of the prompt that
// started it, though the mock (as Codex's and OpenCode's drivers) leaves
// it out; a prompt with none, or one the agent refused, gives its id to
// no turn.
func TestTurnStartedCarriesThePromptsRequestID(t *testing.T) {
	m := runnertest.Manager(t, map[string]agent.Driver{"mock": mock.New(mock.Config{})}, eventlog.Options{})
	s, err := m.Create(ctx(t), sessions.CreateRequest{Agent: "mock", WorkspaceID: "requests"})
	if err != nil {
		t.Fatal(err)
	}
	var seen []agent.Event
	events := follow(t, m, s.ID, 0)
	until(t, events, agent.KindSessionStarted, &seen)

	if err := m.Prompt(ctx(t), s.ID, agent.Prompt{Text: "REQUEST_APPROVAL", RequestID: "r-1"}); err != nil {
		t.Fatal(err)
	}
	first := until(t, events, agent.KindTurnStarted, &seen)
	if first.Turn == nil || first.Turn.RequestID != "r-1" {
		t.Fatalf("turn.started %+v, want request r-1", first.Turn)
	}
	// Refused while the first turn waits for its approval: r-2 is no
	// turn's.
	if err := m.Prompt(ctx(t), s.ID, agent.Prompt{Text: "again", RequestID: "r-2"}); !errors.Is(err, agent.ErrTurnInProgress) {
		t.Fatalf("a prompt during a turn: %v", err)
	}
	approval := until(t, events, agent.KindApprovalRequested, &seen)
	if _, err := m.Resolve(ctx(t), s.ID, agent.Resolution{ApprovalID: approval.Approval.ID, Decision: agent.Deny, Cause: agent.CauseClient}); err != nil {
		t.Fatal(err)
	}
	until(t, events, agent.KindTurnCompleted, &seen)

	if err := m.Prompt(ctx(t), s.ID, agent.Prompt{Text: "no id"}); err != nil {
		t.Fatal(err)
	}
	if second := until(t, events, agent.KindTurnStarted, &seen); second.Turn != nil && second.Turn.RequestID != "" {
		t.Fatalf("a prompt without an id started a turn of request %q", second.Turn.RequestID)
	}
	until(t, events, agent.KindTurnCompleted, &seen)
	if err := m.Prompt(ctx(t), s.ID, agent.Prompt{Text: "hello", RequestID: "r-3"}); err != nil {
		t.Fatal(err)
	}
	if third := until(t, events, agent.KindTurnStarted, &seen); third.Turn == nil || third.Turn.RequestID != "r-3" {
		t.Fatalf("turn.started %+v, want request r-3", third.Turn)
	}
}
