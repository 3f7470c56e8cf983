package codex_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
)

// Under the "untrusted" policy the driver sets, Codex 0.169.0 asks even
// before a read-only command (ls) that its exec_command tool runs.
func TestRealCLIReadOnlyCommandAsks(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "USE_SHELL ls"}); err != nil {
		t.Fatal(err)
	}
	req, _ := w.until(0, isApproval)
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: req.Approval.ID, Decision: agent.Allow}); err != nil {
		t.Fatal(err)
	}
	end, _ := w.turnEnd(0)
	cmd, _ := w.until(0, func(e agent.Event) bool {
		return e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand
	})
	if end.Turn.Status != agent.TurnCompleted || cmd.Item.Status != agent.ItemDone {
		t.Errorf("turn %+v, command %+v\n%s", end.Turn, cmd.Item, w.dump())
	}
}

// A command allowed for the session runs again in that session without
// asking (Codex's acceptForSession); another command still asks.
func TestRealCLICommandAllowedForSession(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	const again = "USE_SHELL echo once >> log.txt"
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: again}); err != nil {
		t.Fatal(err)
	}
	req, _ := w.until(0, isApproval)
	if !slices.Contains(req.Approval.Scopes, agent.ScopeSession) {
		t.Fatalf("approval scopes %v, want session among them", req.Approval.Scopes)
	}
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: req.Approval.ID, Decision: agent.Allow, Scope: agent.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	_, n := w.turnEnd(0)
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: again}); err != nil {
		t.Fatal(err)
	}
	next, n := w.until(n+1, func(e agent.Event) bool { return isApproval(e) || e.Kind == agent.KindTurnCompleted })
	if next.Kind != agent.KindTurnCompleted || next.Turn.Status != agent.TurnCompleted {
		t.Fatalf("the same command again: %s, want the turn completed without asking\n%s", next.Kind, w.dump())
	}
	if data, err := os.ReadFile(filepath.Join(r.ws, "log.txt")); err != nil || string(data) != "once\nonce\n" {
		t.Errorf("log.txt = %q, %v: want the command run twice", data, err)
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "USE_SHELL touch other.txt"}); err != nil {
		t.Fatal(err)
	}
	other, _ := w.until(n+1, func(e agent.Event) bool { return isApproval(e) || e.Kind == agent.KindTurnCompleted })
	if !isApproval(other) {
		t.Fatalf("another command: %s, want it asked\n%s", other.Kind, w.dump())
	}
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: other.Approval.ID, Decision: agent.Deny}); err != nil {
		t.Fatal(err)
	}
	w.turnEnd(n + 1)
}
