package approvals_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func open(t *testing.T, path string, c *clock) *approvals.Store {
	t.Helper()
	s, err := approvals.Open(path, c.now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func approval(session, id string) agent.Approval {
	return agent.Approval{ID: id, SessionID: session, Kind: agent.ApprovalTool, Tool: "Bash", Title: "Bash: ls", Agent: "mock"}
}

func TestFirstResolutionWins(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	s := open(t, filepath.Join(t.TempDir(), "approvals.db"), c)
	if err := s.Add(approval("s1", "a1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(approval("s1", "a1")); !errors.Is(err, approvals.ErrExists) {
		t.Fatalf("second add: %v", err)
	}
	// Many clients answer at once: exactly one decision stands, and every
	// other is told which.
	var wg sync.WaitGroup
	wins := make(chan agent.Resolution, 16)
	losers := make(chan *agent.AlreadyResolvedError, 16)
	for i := range 16 {
		wg.Go(func() {
			d := agent.Allow
			if i%2 == 1 {
				d = agent.Deny
			}
			r, err := s.Resolve("s1", agent.Resolution{ApprovalID: "a1", Decision: d, By: string(rune('a' + i))})
			var already *agent.AlreadyResolvedError
			switch {
			case err == nil:
				wins <- r
			case errors.As(err, &already):
				losers <- already
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	close(wins)
	close(losers)
	var won []agent.Resolution
	for r := range wins {
		won = append(won, r)
	}
	if len(won) != 1 || won[0].Cause != agent.CauseClient || !won[0].At.Equal(c.now()) {
		t.Fatalf("winners %+v", won)
	}
	n := 0
	for l := range losers {
		n++
		if l.First.By != won[0].By || l.First.Decision != won[0].Decision {
			t.Errorf("a loser was told %+v, the winner was %+v", l.First, won[0])
		}
	}
	if n != 15 {
		t.Fatalf("%d losers", n)
	}
	if _, err := s.Resolve("s1", agent.Resolution{ApprovalID: "nope", Decision: agent.Allow}); !errors.Is(err, agent.ErrUnknownApproval) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := s.Resolve("s2", agent.Resolution{ApprovalID: "a1", Decision: agent.Allow}); !errors.Is(err, agent.ErrUnknownApproval) {
		t.Fatalf("same id, other session: %v", err)
	}
}

// A pending approval survives the runner's restart: it is listed, can be
// waited for and answered.
func TestSurvivesRestart(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "approvals.db")
	s, err := approvals.Open(path, c.now)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a1", "a2"} {
		if err := s.Add(approval("s1", id)); err != nil {
			t.Fatal(err)
		}
		c.add(time.Second)
	}
	if _, err := s.Resolve("s1", agent.Resolution{ApprovalID: "a1", Decision: agent.Deny}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, c)
	pending, err := s.Pending()
	if err != nil || len(pending) != 1 || pending[0].Approval.ID != "a2" {
		t.Fatalf("pending after restart: %+v %v", pending, err)
	}
	got := make(chan agent.Resolution, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		r, err := s.Wait(ctx, "s1", "a2")
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	if _, err := s.Resolve("s1", agent.Resolution{ApprovalID: "a2", Decision: agent.Allow, Scope: agent.ScopeSession, By: "phone"}); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Decision != agent.Allow || r.By != "phone" || r.Scope != agent.ScopeSession {
		t.Fatalf("waiter got %+v", r)
	}
	// Waiting for one already decided returns at once.
	if r, err := s.Wait(ctx, "s1", "a1"); err != nil || r.Decision != agent.Deny {
		t.Fatalf("wait on a decided approval: %+v %v", r, err)
	}
}

// Expiry applies the approval's default (deny unless it says allow) when
// its time has come, and never overrides an answer.
func TestExpiry(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	s := open(t, filepath.Join(t.TempDir(), "approvals.db"), c)
	soon, later, allow, answered := approval("s1", "soon"), approval("s1", "later"), approval("s1", "allow"), approval("s1", "answered")
	soon.Expires = c.now().Add(time.Minute)
	later.Expires = c.now().Add(time.Hour)
	allow.Expires, allow.Default = c.now().Add(time.Minute), agent.Allow
	answered.Expires = c.now().Add(time.Minute)
	for _, a := range []agent.Approval{soon, later, allow, answered, approval("s1", "never")} {
		if err := s.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Resolve("s1", agent.Resolution{ApprovalID: "answered", Decision: agent.Allow}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Expire(); err != nil || len(got) != 0 {
		t.Fatalf("expired before their time: %+v %v", got, err)
	}
	c.add(time.Minute)
	got, err := s.Expire()
	if err != nil || len(got) != 2 {
		t.Fatalf("expired %+v %v", got, err)
	}
	want := map[string]agent.Decision{"soon": agent.Deny, "allow": agent.Allow}
	for _, rec := range got {
		r := rec.Resolution
		if want[r.ApprovalID] != r.Decision || r.Cause != agent.CauseExpired || rec.Approval.SessionID != "s1" {
			t.Errorf("expired %+v", rec)
		}
	}
	if rec, _ := s.Get("s1", "answered"); rec.Resolution.Cause != agent.CauseClient {
		t.Errorf("expiry overrode an answer: %+v", rec.Resolution)
	}
	if pending, _ := s.Pending(); len(pending) != 2 {
		t.Errorf("still pending: %+v", pending)
	}
}

// A session that ends takes its open approvals with it: denied, with the
// cause, and nobody waits forever.
func TestResolveSession(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	s := open(t, filepath.Join(t.TempDir(), "approvals.db"), c)
	for _, a := range []agent.Approval{approval("s1", "a"), approval("s1", "b"), approval("s2", "a")} {
		if err := s.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waited := make(chan agent.Resolution, 1)
	go func() {
		r, _ := s.Wait(ctx, "s1", "b")
		waited <- r
	}()
	got, err := s.ResolveSession("s1", agent.CauseInterrupted, "the turn was interrupted")
	if err != nil || len(got) != 2 {
		t.Fatalf("resolved %+v %v", got, err)
	}
	if r := <-waited; r.Decision != agent.Deny || r.Cause != agent.CauseInterrupted {
		t.Fatalf("waiter got %+v", r)
	}
	if pending, _ := s.Pending(); len(pending) != 1 || pending[0].Approval.SessionID != "s2" {
		t.Fatalf("pending %+v", pending)
	}
	// A wait that gives up returns its context's error.
	short, stop := context.WithTimeout(context.Background(), time.Millisecond)
	defer stop()
	if _, err := s.Wait(short, "s2", "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait past its deadline: %v", err)
	}
}

// A question's answers must be its options (one, unless it takes several):
// a bad answer is refused and the question stays open for a good one; a
// deny needs no answer.
func TestQuestionAnswers(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	s := open(t, filepath.Join(t.TempDir(), "approvals.db"), c)
	q := agent.Approval{ID: "q1", SessionID: "s1", Kind: agent.ApprovalQuestion, Title: "Colour?", Agent: "claude",
		Question: &agent.Question{Prompt: "Colour?", Options: []agent.Option{{ID: "0", Label: "Red"}, {ID: "1", Label: "Blue"}}}}
	multi := q
	multi.ID, multi.Question = "q2", &agent.Question{Prompt: "Colours?", MultiSelect: true, Options: q.Question.Options}
	for _, a := range []agent.Approval{q, multi} {
		if err := s.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	var bad *agent.BadAnswerError
	for _, answers := range [][]string{{"7"}, {"0", "1"}} {
		_, err := s.Resolve("s1", agent.Resolution{ApprovalID: "q1", Decision: agent.Allow, Answers: answers})
		if !errors.As(err, &bad) || !errors.Is(err, agent.ErrBadAnswer) || bad.ApprovalID != "q1" {
			t.Fatalf("answers %v: %v", answers, err)
		}
	}
	if rec, _ := s.Get("s1", "q1"); !rec.Pending() {
		t.Fatal("a refused answer closed the question")
	}
	if r, err := s.Resolve("s1", agent.Resolution{ApprovalID: "q1", Decision: agent.Allow, Answers: []string{"1"}}); err != nil || r.Answers[0] != "1" {
		t.Fatalf("a good answer: %+v %v", r, err)
	}
	if _, err := s.Resolve("s1", agent.Resolution{ApprovalID: "q2", Decision: agent.Allow, Answers: []string{"0", "1"}}); err != nil {
		t.Fatalf("several answers to a multi-select question: %v", err)
	}
}
