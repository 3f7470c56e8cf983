package codex_test

import (
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
