package sessionscmd_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/internal/cli/sessionscmd"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the mock claude CLI.
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

func env(t *testing.T) (sessionscmd.Env, *testenv.SyncBuffer, *testenv.SyncBuffer) {
	base := runnertest.SessionsAPI(t, map[string]agent.Driver{"claude": runnertest.MockClaude("demo")})
	var out, errOut testenv.SyncBuffer
	return sessionscmd.Env{Client: &client.Client{BaseURL: base}, Out: &out, Err: &errOut}, &out, &errOut
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// attach with a terminal: the session's work scrolls by, its approval is
// asked and answered y, and the turn's end ends the command.
func TestAttachAnswersOnTheTerminal(t *testing.T) {
	e, out, errOut := env(t)
	s, err := e.Client.Create(ctxFor(t), client.CreateRequest{Agent: "claude", WorkspaceID: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	code := sessionscmd.Attach(ctxFor(t), e, sessionscmd.AttachOptions{SessionID: s.ID, Prompt: "hello",
		In: strings.NewReader("y\n"), UntilTurnEnd: true})
	got := out.String()
	if code != sessionscmd.ExitOK || !strings.Contains(got, "? Allow Write: ") || !strings.Contains(got, "  allow\n") ||
		!strings.Contains(got, "> hello") || !strings.Contains(got, "✓ completed") {
		t.Fatalf("exit %d\n%s\nstderr: %s", code, got, errOut.String())
	}
	if !strings.Contains(got, "[completed]") {
		t.Errorf("the allowed write did not complete:\n%s", got)
	}

	out.Reset()
	if code := sessionscmd.Sessions(ctxFor(t), e); code != 0 || !strings.Contains(out.String(), s.ID) || !strings.Contains(out.String(), "idle") {
		t.Fatalf("sessions: %d\n%s", code, out.String())
	}
}

// Listing and answering from another terminal: the approval is listed,
// answered once, and a second answer says who was first.
func TestApproveFromElsewhere(t *testing.T) {
	e, out, errOut := env(t)
	ctx := ctxFor(t)
	s, err := e.Client.Create(ctx, client.CreateRequest{Agent: "claude", WorkspaceID: "w1", Prompt: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	var approval agent.Approval
	for ev, err := range e.Client.Events(ctx, s.ID, 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.KindApprovalRequested {
			approval = *ev.Approval
			break
		}
	}
	if code := sessionscmd.Approvals(ctx, e); code != 0 || !strings.Contains(out.String(), approval.ID) || !strings.Contains(out.String(), "Write: ") {
		t.Fatalf("approvals: %d\n%s", code, out.String())
	}
	out.Reset()
	if code := sessionscmd.Resolve(ctx, e, s.ID, approval.ID, client.Answer{Decision: agent.Deny}); code != 0 || out.String() != "denied "+approval.ID+"\n" {
		t.Fatalf("deny: %d %q", code, out.String())
	}
	if code := sessionscmd.Resolve(ctx, e, s.ID, approval.ID, client.Answer{Decision: agent.Allow}); code != sessionscmd.ExitFailed ||
		!strings.Contains(errOut.String(), "was already answered: deny") {
		t.Fatalf("second answer: %d %q", code, errOut.String())
	}
	out.Reset()
	if code := sessionscmd.Approvals(ctx, e); code != 0 || out.String() != "no approval is waiting\n" {
		t.Fatalf("after: %q", out.String())
	}
}
