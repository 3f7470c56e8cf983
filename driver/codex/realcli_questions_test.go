package codex_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
)

// askDatabase has the fake model call Codex's request_user_input tool with
// one question of two options.
const askDatabase = `USE_TOOL request_user_input {"questions":[{"id":"db","header":"Database","question":"Which database?",` +
	`"options":[{"label":"Postgres","description":"relational"},{"label":"SQLite","description":"a file"}]}]}`

// The model's request_user_input is a question approval; the chosen
// option's label is the answer the model gets.
func TestRealCLIQuestionAnswered(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: askDatabase}); err != nil {
		t.Fatal(err)
	}
	req := question(t, w)
	a := req.Approval
	if a.Kind != agent.ApprovalQuestion || a.Question == nil || a.Question.Prompt != "Which database?" || a.Title != "Which database?" ||
		!slices.Equal(a.Question.Labels([]string{"0", "1"}), []string{"Postgres", "SQLite"}) || a.TurnID == "" || a.ItemID == "" {
		t.Fatalf("approval %+v question %+v", a, a.Question)
	}
	var bad *agent.BadAnswerError
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: a.ID, Decision: agent.Allow, Answers: []string{"7"}}); !errors.As(err, &bad) {
		t.Errorf("an answer of no option: %v, want *BadAnswerError", err)
	}
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: a.ID, Decision: agent.Allow, Answers: []string{"1"}}); err != nil {
		t.Fatal(err)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnCompleted || !strings.Contains(end.Turn.Text, "SQLite") {
		t.Fatalf("turn.completed %+v\n%s", end.Turn, w.dump())
	}
	res, _ := w.kind(0, agent.KindApprovalResolved)
	if res.Resolution.Decision != agent.Allow || !slices.Equal(res.Resolution.Answers, []string{"1"}) {
		t.Errorf("approval.resolved %+v", res.Resolution)
	}
	if out := lastToolOutput(t, r.srv); !strings.Contains(out, "SQLite") || strings.Contains(out, "Postgres") {
		t.Errorf("the fake saw tool output %q, want the answer SQLite", out)
	}
}

// A question denied is answered with no answer; the turn goes on.
func TestRealCLIQuestionDismissed(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: askDatabase}); err != nil {
		t.Fatal(err)
	}
	req := question(t, w)
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: req.Approval.ID, Decision: agent.Deny}); err != nil {
		t.Fatal(err)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("turn.completed %+v\n%s", end.Turn, w.dump())
	}
	if out := lastToolOutput(t, r.srv); strings.Contains(out, "Postgres") || strings.Contains(out, "SQLite") {
		t.Errorf("the fake saw tool output %q, want no answer", out)
	}
}

// question waits for the turn's first approval.requested, and fails the
// test when the turn ends without one.
func question(t *testing.T, w *watch) agent.Event {
	t.Helper()
	e, _ := w.until(0, func(e agent.Event) bool { return isApproval(e) || e.Kind == agent.KindTurnCompleted })
	if !isApproval(e) {
		t.Fatalf("the turn ended without asking\n%s", w.dump())
	}
	return e
}
