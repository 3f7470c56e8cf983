package claudecli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/mockclaude"
)

// mockDriver runs this test binary as the mock CLI in a scenario.
func mockDriver(t *testing.T, scenario string) (*Canonical, string) {
	dir := t.TempDir()
	return &Canonical{Base: claude.Options{CLIPath: os.Args[0], ReplaceEnv: true, Env: map[string]string{
		mockclaude.EnvMain: "1", mockclaude.EnvScenario: scenario, "PATH": os.Getenv("PATH"),
	}}}, dir
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// events reads s's events into a channel until the session ends.
func events(t *testing.T, s agent.Session) <-chan agent.Event {
	ch := make(chan agent.Event, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for e, err := range s.Events(context.Background()) {
			if err != nil {
				return
			}
			ch <- e
		}
	}()
	t.Cleanup(func() { _ = s.Close(); <-done })
	return ch
}

func waitFor(t *testing.T, ch <-chan agent.Event, k agent.Kind) agent.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("events ended before %s", k)
			}
			if err := e.Validate(); err != nil {
				t.Fatalf("%v: %+v", err, e)
			}
			if e.Kind == k {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s", k)
		}
	}
}

// An approval is answered once: the first resolution wins, a second one
// learns it, an unknown id is refused; a prompt during a turn and an
// interrupt with none are refused.
func TestCanonicalApprovalsAndTurnRules(t *testing.T) {
	d, dir := mockDriver(t, "demo")
	s, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	ch := events(t, s)
	if err := s.Interrupt(ctxFor(t)); !errors.Is(err, agent.ErrNoTurn) {
		t.Fatalf("interrupt with no turn: %v", err)
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "again"}); !errors.Is(err, agent.ErrTurnInProgress) {
		t.Fatalf("prompt during a turn: %v", err)
	}
	asked := waitFor(t, ch, agent.KindApprovalRequested)
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: "nope", Decision: agent.Allow}); !errors.Is(err, agent.ErrUnknownApproval) {
		t.Fatalf("unknown approval: %v", err)
	}
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: asked.Approval.ID, Decision: agent.Deny, By: "first"}); err != nil {
		t.Fatal(err)
	}
	var already *agent.AlreadyResolvedError
	err = s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: asked.Approval.ID, Decision: agent.Allow, By: "second"})
	if !errors.As(err, &already) || already.First.By != "first" || already.First.Decision != agent.Deny {
		t.Fatalf("second resolution: %v", err)
	}
	resolved := waitFor(t, ch, agent.KindApprovalResolved)
	if resolved.Resolution.Decision != agent.Deny || resolved.Resolution.Cause != agent.CauseClient {
		t.Fatalf("resolved %+v", resolved.Resolution)
	}
	if end := waitFor(t, ch, agent.KindTurnCompleted); end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("turn %+v", end.Turn)
	}
	changes, _ := s.Messages(ctxFor(t))
	found := false
	for _, it := range changes {
		if it.Type == agent.ItemFileChange {
			found = it.Status == agent.ItemDeclined
		}
	}
	if !found {
		t.Fatalf("no declined file change in %+v", changes)
	}
}

// Closing a session whose approval waits ends the wait, the CLI and every
// goroutine (goleak checks at the end of the package). The turn is
// interrupted first, so the CLI stops where it stands: closed at once, it
// answers its own permission request and finishes the turn.
func TestCanonicalCloseWithPendingApproval(t *testing.T) {
	d, dir := mockDriver(t, "demo")
	s, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	ch := events(t, s)
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ch, agent.KindApprovalRequested)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var after []agent.Event
	for e := range ch {
		after = append(after, e)
	}
	end := slices.IndexFunc(after, func(e agent.Event) bool { return e.Kind == agent.KindTurnCompleted })
	if end < 0 || after[end].Turn.Status != agent.TurnInterrupted || after[end].Error != nil {
		t.Fatalf("after the close: %+v", after)
	}
	for _, e := range after {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemMessage && strings.Contains(e.Item.Text, "couldn't write") {
			t.Errorf("the CLI went on after the close: %q", e.Item.Text)
		}
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "after"}); err == nil {
		t.Fatal("a closed session took a prompt")
	}
}

// A CLI that dies ends the session with agent_exited and why.
func TestCanonicalCrash(t *testing.T) {
	d, dir := mockDriver(t, "crash")
	s, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	ch := events(t, s)
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	turn := waitFor(t, ch, agent.KindTurnCompleted)
	if turn.Turn.Status != agent.TurnFailed || turn.Error.Code != agent.ErrorAgentExit {
		t.Fatalf("the dead CLI's turn ended %+v %+v", turn.Turn, turn.Error)
	}
	end := waitFor(t, ch, agent.KindSessionEnded)
	if end.Session.Reason != "exited" || end.Error == nil || end.Error.Code != agent.ErrorAgentExit {
		t.Fatalf("session ended %+v %+v", end.Session, end.Error)
	}
}

// A line the CLI writes that is not a message (not JSON, null, a number)
// is reported as an error event with the line as its raw payload, and the
// turn goes on to its end.
func TestCanonicalJunkLines(t *testing.T) {
	d, dir := mockDriver(t, "junk")
	s, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	ch := events(t, s)
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	var reported []string
	for e := waitFor(t, ch, agent.KindError); ; e = <-ch {
		if err := e.Validate(); err != nil {
			t.Fatal(err)
		}
		if e.Kind == agent.KindError {
			if e.Error.Code != agent.ErrorProtocol {
				t.Fatalf("error %+v", e.Error)
			}
			reported = append(reported, string(e.Raw))
		}
		if e.Kind == agent.KindTurnCompleted {
			if e.Turn.Status != agent.TurnCompleted {
				t.Fatalf("the turn ended %+v", e.Turn)
			}
			break
		}
	}
	if !slices.Contains(reported, `"mock: this line is not JSON"`) || !slices.Contains(reported, "null") {
		t.Fatalf("reported %q", reported)
	}
}

// An allow with an edited input runs the call with it: the CLI writes
// what the person changed the Write to, not what the model asked.
func TestCanonicalEditedInput(t *testing.T) {
	d, dir := mockDriver(t, "demo")
	if !d.Capabilities().EditInput {
		t.Fatal("Claude Code takes edited input; its capabilities do not say so")
	}
	s, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ch := events(t, s)
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	asked := waitFor(t, ch, agent.KindApprovalRequested)
	edited := filepath.Join(dir, "edited.txt")
	input, _ := json.Marshal(map[string]string{"file_path": edited, "content": "edited by a person\n"})
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: asked.Approval.ID, Decision: agent.Allow, Input: input}); err != nil {
		t.Fatal(err)
	}
	// The Write's item says what ran: the path the person gave.
	done := waitFor(t, ch, agent.KindItemCompleted)
	for done.Item.Type != agent.ItemFileChange {
		done = waitFor(t, ch, agent.KindItemCompleted)
	}
	if len(done.Item.Changes) != 1 || done.Item.Changes[0].Path != edited {
		t.Errorf("the Write's file change names %+v, want %s", done.Item.Changes, edited)
	}
	if end := waitFor(t, ch, agent.KindTurnCompleted); end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("turn %+v", end.Turn)
	}
	if got, err := os.ReadFile(edited); err != nil || string(got) != "edited by a person\n" {
		t.Errorf("edited.txt = %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "hello.txt")); err == nil {
		t.Error("the call ran with the input the model asked")
	}
}

// A session whose host keeps the history (the runner's log) keeps no
// completed items of its own: Messages says where they are.
func TestCanonicalHostKeepsHistory(t *testing.T) {
	d, dir := mockDriver(t, "demo")
	s, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: dir, HostKeepsHistory: true})
	if err != nil {
		t.Fatal(err)
	}
	ch := events(t, s)
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	asked := waitFor(t, ch, agent.KindApprovalRequested)
	if err := s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: asked.Approval.ID, Decision: agent.Deny}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ch, agent.KindTurnCompleted)
	items, err := s.Messages(ctxFor(t))
	var elsewhere *agent.HistoryElsewhereError
	if !errors.As(err, &elsewhere) || len(items) != 0 || len(elsewhere.Past) != 0 {
		t.Fatalf("Messages = %d items, %v; want the history left to the host", len(items), err)
	}
	if !errors.Is(err, agent.ErrHistoryElsewhere) {
		t.Fatalf("%v does not match ErrHistoryElsewhere", err)
	}
}
