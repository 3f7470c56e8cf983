package main

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
)

// On SIGTERM the sessions API takes no new session or turn, and its turns
// in progress get the shutdown's grace: one that ends within it (a Claude
// Code turn of about 2 s, and a mock turn whose approval a client answers
// after the signal) completes normally; one that would run on (the mock's
// SLOW) is interrupted once the grace is over, not before.
func TestServeSIGTERMLetsSessionsAPITurnsFinish(t *testing.T) {
	const grace = 5 * time.Second
	p := startServe(t, cleanEnv(), "--cli", mockCLI(t, "slow", 40), "--shutdown-timeout", grace.String())
	c := apiClient(p)
	ctx := context.Background()
	claude, err := c.Create(ctx, client.CreateRequest{Agent: "claude", WorkspaceID: "claude", Prompt: "tick"})
	if err != nil {
		t.Fatal(err)
	}
	claudeEvents := watch(t, c, claude.ID)
	asking := createMock(t, c, "asking", "REQUEST_APPROVAL")
	askingEvents := watch(t, c, asking)
	approval := askingEvents.until("the approval", kind(agent.KindApprovalRequested)).Approval
	slow := createMock(t, c, "slow", "SLOW")
	slowEvents := watch(t, c, slow)
	slowEvents.until("the slow command", kind(agent.KindItemDelta))
	idle := createMock(t, c, "idle", "")
	claudeEvents.until("the turn's start", kind(agent.KindTurnStarted))

	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Nothing new starts once the shutdown has begun (a prompt that came
	// before may still have run a turn)…
	var refused *client.Error
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(10 * time.Millisecond) {
		err := c.Prompt(ctx, idle, "hello")
		if errors.As(err, &refused) && refused.Status == http.StatusServiceUnavailable && refused.Code == "shutting_down" {
			break
		}
		if err != nil && !errors.Is(err, agent.ErrTurnInProgress) || time.Now().After(deadline) {
			t.Fatalf("a new turn after SIGTERM: %v", err)
		}
	}
	if _, err := c.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "late"}); !errors.As(err, &refused) || refused.Code != "shutting_down" {
		t.Errorf("a new session during the shutdown: %v", err)
	}
	// …but a turn's approval is still answered, and the turns in progress
	// complete.
	if _, err := c.Resolve(ctx, asking, approval.ID, client.Answer{Decision: agent.Allow}); err != nil {
		t.Fatalf("answering an approval during the shutdown: %v", err)
	}
	if end := askingEvents.until("the turn's end", kind(agent.KindTurnCompleted)); end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("the approved turn ended %s after SIGTERM: %+v", end.Turn.Status, end.Error)
	}
	if end := claudeEvents.until("the turn's end", kind(agent.KindTurnCompleted)); end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("the Claude Code turn ended %s after SIGTERM: %+v", end.Turn.Status, end.Error)
	}
	// The SLOW turn is interrupted when the grace is over.
	end := slowEvents.until("the slow turn's end", kind(agent.KindTurnCompleted))
	if end.Turn.Status != agent.TurnInterrupted {
		t.Fatalf("the slow turn ended %s: %+v", end.Turn.Status, end.Error)
	}
	if early := end.Time.Sub(sent); early < grace {
		t.Fatalf("the slow turn was interrupted %v after SIGTERM, within the %v grace", early, grace)
	}
	for _, w := range []*watcher{claudeEvents, askingEvents, slowEvents} {
		if events := w.toEnd(); len(openItems(events)) != 0 {
			t.Errorf("session %s left items open: %s", w.id, kinds(events))
		}
	}
	if code := p.wait(waitLimit); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, p.log())
	}
	t.Logf("exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
}
