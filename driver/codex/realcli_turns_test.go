package codex_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/driver/codex"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
)

// slowOpts make SLOW replies last about 6 s.
var slowOpts = fakeopenai.Options{SlowChunkDelay: 200 * time.Millisecond, SlowChunks: 30}

func isDelta(e agent.Event) bool { return e.Kind == agent.KindItemDelta }

// An interrupt of a slow turn ends it interrupted at once, its open message
// fails, and the session takes the next prompt.
func TestRealCLIInterrupt(t *testing.T) {
	r := newRig(t, slowOpts, nil)
	s, w := r.start(agentStart())
	if err := s.Interrupt(ctxFor(t)); !errors.Is(err, agent.ErrNoTurn) {
		t.Errorf("Interrupt with no turn = %v, want ErrNoTurn", err)
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "be SLOW"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "again"}); !errors.Is(err, agent.ErrTurnInProgress) {
		t.Errorf("Prompt during a turn = %v, want ErrTurnInProgress", err)
	}
	delta, _ := w.until(0, isDelta)
	asked := time.Now()
	if err := s.Interrupt(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	end, at := w.turnEnd(0)
	if end.Turn.Status != agent.TurnInterrupted {
		t.Fatalf("turn.completed %+v\n%s", end.Turn, w.dump())
	}
	if took := time.Since(asked); took > 3*time.Second {
		t.Errorf("the interrupt took %v", took)
	}
	msg, _ := w.until(0, func(e agent.Event) bool {
		return e.Kind == agent.KindItemCompleted && e.Item.ID == delta.Delta.ItemID
	})
	if msg.Item.Status != agent.ItemFailed {
		t.Errorf("the interrupted message completed %s", msg.Item.Status)
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "SAY after"}); err != nil {
		t.Fatal(err)
	}
	next, _ := w.turnEnd(at + 1)
	if next.Turn.Status != agent.TurnCompleted || next.Turn.Text != "after" {
		t.Errorf("the next turn %+v", next.Turn)
	}
}

// A turn past Config.TurnTimeout is interrupted and fails with turn_limit.
func TestRealCLITurnTimeout(t *testing.T) {
	r := newRig(t, slowOpts, func(c *driver.Config) { c.TurnTimeout = time.Second })
	s, w := r.start(agentStart())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "be SLOW"}); err != nil {
		t.Fatal(err)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnFailed || end.Error == nil || end.Error.Code != agent.ErrorTurnLimit {
		t.Fatalf("turn.completed %+v %+v\n%s", end.Turn, end.Error, w.dump())
	}
}

// A steer adds the user's text to the running turn: Codex echoes it as a
// user message of that turn.
func TestRealCLISteer(t *testing.T) {
	r := newRig(t, slowOpts, nil)
	s, w := r.start(agentStart())
	if err := s.Steer(ctxFor(t), agent.Prompt{Text: "x"}); !errors.Is(err, agent.ErrNoTurn) {
		t.Errorf("Steer with no turn = %v, want ErrNoTurn", err)
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "be SLOW"}); err != nil {
		t.Fatal(err)
	}
	delta, _ := w.until(0, isDelta)
	if err := s.Steer(ctxFor(t), agent.Prompt{Text: "SAY steered"}); err != nil {
		t.Fatal(err)
	}
	steer, _ := w.until(0, func(e agent.Event) bool {
		return e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemUserMessage && e.Item.Text == "SAY steered"
	})
	if steer.TurnID != delta.TurnID {
		t.Errorf("the steer's message is in turn %q, the running turn is %q", steer.TurnID, delta.TurnID)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnCompleted || end.Turn.Text != "steered" {
		t.Errorf("turn.completed %+v\n%s", end.Turn, w.dump())
	}
}

// A provider error fails the turn with api_error and the HTTP status; the
// session goes on.
func TestRealCLIProviderError(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	from := 0
	for _, status := range []int{500, 400} {
		if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "ERROR_" + itoa(status)}); err != nil {
			t.Fatal(err)
		}
		end, at := w.turnEnd(from)
		if end.Turn.Status != agent.TurnFailed || end.Error == nil || end.Error.Code != agent.ErrorAPI || end.Error.Status != status {
			t.Errorf("ERROR_%d: turn.completed %+v %+v %s\n%s", status, end.Turn, end.Error, end.Raw, w.dump())
		}
		from = at + 1
	}
}

// A killed app-server fails the running turn {agent_exited} and ends the
// session {exited}; nothing of it is left.
func TestRealCLIKilled(t *testing.T) {
	r := newRig(t, slowOpts, nil)
	s, w := r.start(agentStart())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "be SLOW"}); err != nil {
		t.Fatal(err)
	}
	delta, _ := w.until(0, isDelta)
	pids := pidsIn(r.ws)
	if len(pids) == 0 {
		t.Fatal("no codex process in the workspace")
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnFailed || end.Error == nil || end.Error.Code != agent.ErrorAgentExit {
		t.Fatalf("turn.completed %+v %+v\n%s", end.Turn, end.Error, w.dump())
	}
	msg, _ := w.until(0, func(e agent.Event) bool {
		return e.Kind == agent.KindItemCompleted && e.Item.ID == delta.Delta.ItemID
	})
	if msg.Item.Status != agent.ItemFailed {
		t.Errorf("the open message completed %s", msg.Item.Status)
	}
	ended, _ := w.kind(0, agent.KindSessionEnded)
	if ended.Session.Reason != "exited" || ended.Error == nil || ended.Error.Code != agent.ErrorAgentExit {
		t.Errorf("session.ended %+v %+v", ended.Session, ended.Error)
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "hi"}); !errors.Is(err, agent.ErrSessionEnded) {
		t.Errorf("Prompt after the end = %v, want ErrSessionEnded", err)
	}
}

// Close with an approval pending resolves it (turn_ended), interrupts the
// turn (the host ended it; it did not fail), completes the command that
// waited for it declined (it never ran) and ends the session {closed}; a
// later resolution learns the first.
func TestRealCLICloseWithPendingApproval(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "USE_SHELL touch ran.txt"}); err != nil {
		t.Fatal(err)
	}
	req, _ := w.until(0, isApproval)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	res, _ := w.kind(0, agent.KindApprovalResolved)
	if res.Resolution.ApprovalID != req.Approval.ID || res.Resolution.Cause != agent.CauseTurnEnded || res.Resolution.Decision != agent.Deny {
		t.Errorf("approval.resolved %+v", res.Resolution)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnInterrupted || end.Error != nil {
		t.Errorf("turn.completed %+v %+v", end.Turn, end.Error)
	}
	waitedDeclined(t, w, req.Approval.ItemID)
	ended, _ := w.kind(0, agent.KindSessionEnded)
	if ended.Session.Reason != "closed" {
		t.Errorf("session.ended %+v", ended.Session)
	}
	err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: req.Approval.ID, Decision: agent.Allow})
	var already *agent.AlreadyResolvedError
	if !errors.As(err, &already) || already.First.Cause != agent.CauseTurnEnded {
		t.Errorf("Resolve after Close = %v", err)
	}
}

// An interrupt clears a pending approval: approval.resolved {interrupted},
// and the command that waited for it completes declined (it never ran).
func TestRealCLIInterruptPendingApproval(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "USE_SHELL touch ran.txt"}); err != nil {
		t.Fatal(err)
	}
	req, _ := w.until(0, isApproval)
	if err := s.Interrupt(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	res, _ := w.kind(0, agent.KindApprovalResolved)
	if res.Resolution.ApprovalID != req.Approval.ID || res.Resolution.Cause != agent.CauseInterrupted {
		t.Errorf("approval.resolved %+v", res.Resolution)
	}
	end, _ := w.turnEnd(0)
	if end.Turn.Status != agent.TurnInterrupted {
		t.Errorf("turn.completed %+v\n%s", end.Turn, w.dump())
	}
	waitedDeclined(t, w, req.Approval.ItemID)
}

// waitedDeclined checks that item, which waited for an approval the turn's
// end denied, completed declined.
func waitedDeclined(t *testing.T, w *watch, item string) {
	t.Helper()
	done, _ := w.until(0, func(e agent.Event) bool { return e.Kind == agent.KindItemCompleted && e.Item.ID == item })
	if done.Item.Status != agent.ItemDeclined {
		t.Errorf("the command that waited completed %s:\n%s", done.Item.Status, w.dump())
	}
}

// Resume by thread id in a new session: the same thread, its past in
// Messages, and it goes on.
func TestRealCLIResume(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	first, w1 := r.start(agentStart())
	if err := first.Prompt(ctxFor(t), agent.Prompt{Text: "SAY one"}); err != nil {
		t.Fatal(err)
	}
	w1.turnEnd(0)
	thread := first.NativeID()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, w2 := r.start(agent.StartRequest{Resume: thread})
	started, _ := w2.kind(0, agent.KindSessionStarted)
	if started.Session.NativeID != thread {
		t.Fatalf("resumed thread %q, want %q", started.Session.NativeID, thread)
	}
	items, err := second.Messages(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := itemTexts(items); !equal(got, []string{"user_message: SAY one", "message: one"}) {
		t.Errorf("resumed Messages %q", got)
	}
	if err := second.Prompt(ctxFor(t), agent.Prompt{Text: "SAY two"}); err != nil {
		t.Fatal(err)
	}
	if end, _ := w2.turnEnd(0); end.Turn.Text != "two" {
		t.Errorf("turn.completed %+v", end.Turn)
	}
	items, err = second.Messages(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := itemTexts(items); !equal(got, []string{"user_message: SAY one", "message: one", "user_message: SAY two", "message: two"}) {
		t.Errorf("Messages %q", got)
	}
}

// Fork starts a new thread with the old one's past.
func TestRealCLIFork(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	first, w1 := r.start(agentStart())
	if err := first.Prompt(ctxFor(t), agent.Prompt{Text: "SAY one"}); err != nil {
		t.Fatal(err)
	}
	w1.turnEnd(0)
	thread := first.NativeID()
	fork, _ := r.start(agent.StartRequest{Resume: thread, Fork: true, Workspace: t.TempDir()})
	if fork.NativeID() == thread || fork.NativeID() == "" {
		t.Fatalf("fork's thread %q, the original %q", fork.NativeID(), thread)
	}
	items, err := fork.Messages(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := itemTexts(items); !equal(got, []string{"user_message: SAY one", "message: one"}) {
		t.Errorf("fork's Messages %q", got)
	}
}

func itoa(n int) string {
	return string(rune('0'+n/100)) + string(rune('0'+n/10%10)) + string(rune('0'+n%10))
}

// Resuming a thread Codex does not know fails Start with the app-server's
// refusal, and leaves nothing running; bad options fail before anything
// starts.
func TestRealCLIResumeUnknownThread(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	_, err := r.drv.Start(ctxFor(t), agent.StartRequest{Workspace: r.ws, Home: r.home, Resume: "01a2017c-0000-7000-8000-000000000000"})
	if !errors.Is(err, codex.ErrAppServer) {
		t.Fatalf("Start = %v, want ErrAppServer", err)
	}
	if pids := pidsIn(r.ws); len(pids) > 0 {
		t.Errorf("processes left: %v", pids)
	}
	for _, req := range []agent.StartRequest{{Fork: true}, {Options: []byte(`{"x":1}`)}} {
		req.Workspace, req.Home = r.ws, r.home
		if _, err := r.drv.Start(ctxFor(t), req); !errors.Is(err, codex.ErrInvalidOptions) {
			t.Errorf("Start(%+v) = %v, want ErrInvalidOptions", req, err)
		}
	}
}
