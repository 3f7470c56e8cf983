package mock

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
)

// A plain prompt plays the whole script, in order, and writes its note.
func TestTextTurnPlaysTheScript(t *testing.T) {
	st := start(t, New(Config{}), agent.StartRequest{})
	started := st.untilKind(agent.KindSessionStarted)
	if started.Session.Agent != "mock" || started.Session.NativeID != st.s.NativeID() || started.Session.Model != DefaultModel || started.Session.Cwd != st.dir {
		t.Errorf("session.started = %+v", started.Session)
	}
	st.prompt("hello")
	end := st.untilKind(agent.KindTurnCompleted)
	want := []string{
		"session.started", "turn.started", "item.completed:user_message",
		"item.started:reasoning", "item.delta", "item.delta", "item.completed:reasoning",
		"item.completed:plan",
		"item.started:command", "item.delta", "item.completed:command",
		"item.started:file_change", "item.completed:file_change",
		"item.started:tool_call", "item.completed:tool_call",
		"item.started:message",
	}
	got := kinds(st.all)
	if !slices.Equal(got[:len(want)], want) {
		t.Fatalf("events\n got %v\nwant %v…", got, want)
	}
	if tail := got[len(got)-4:]; !slices.Equal(tail, []string{"item.completed:message", "native", "usage", "turn.completed"}) {
		t.Errorf("the turn ends with %v", tail)
	}
	reply := `Mock reply to turn 1: you said "hello". I noted it in mock-notes.md.`
	if end.Turn.Status != agent.TurnCompleted || end.Turn.Text != reply || end.Usage == nil || end.Usage.OutputTokens == 0 {
		t.Errorf("turn.completed = %+v usage %+v", end.Turn, end.Usage)
	}
	var streamed string
	for _, e := range st.all {
		if e.Kind == agent.KindItemDelta && e.Delta.ItemID == "turn-1/reply" {
			streamed += e.Delta.Text
		}
	}
	if streamed != reply {
		t.Errorf("deltas %q, want %q", streamed, reply)
	}
	b, err := os.ReadFile(filepath.Join(st.dir, notesName))
	if err != nil || string(b) != "turn 1: hello\n" {
		t.Errorf("%s = %q, %v", notesName, b, err)
	}
	msgs, _ := st.s.Messages(ctxFor(t))
	if len(msgs) != 7 || msgs[0].Type != agent.ItemUserMessage || msgs[len(msgs)-1].Text != reply {
		t.Errorf("Messages = %+v", msgs)
	}
}

// Over a few turns and the close, every kind and item type appears.
func TestEveryKindAndItemType(t *testing.T) {
	st := start(t, New(Config{}), agent.StartRequest{})
	st.prompt("hello " + WordApproval + " " + WordQuestion)
	for range 2 {
		a := st.untilKind(agent.KindApprovalRequested).Approval
		r := agent.Resolution{ApprovalID: a.ID, Decision: agent.Allow}
		if a.Kind == agent.ApprovalQuestion {
			r.Answers = []string{"green"}
		}
		if err := st.s.Resolve(ctxFor(t), r); err != nil {
			t.Fatal(err)
		}
	}
	end := st.untilKind(agent.KindTurnCompleted)
	if !strings.Contains(end.Turn.Text, "You chose: Green.") || !strings.Contains(end.Turn.Text, "was allowed (once)") {
		t.Errorf("reply %q", end.Turn.Text)
	}
	st.prompt(WordFail)
	failed := st.untilKind(agent.KindTurnCompleted)
	if failed.Turn.Status != agent.TurnFailed || failed.Error.Code != agent.ErrorAPI || failed.Error.Status != 500 {
		t.Errorf("FAIL_TURN ended %+v %+v", failed.Turn, failed.Error)
	}
	_ = st.s.Close()
	st.rest()
	seenKind, seenType := map[agent.Kind]bool{}, map[agent.ItemType]bool{}
	for _, e := range st.all {
		seenKind[e.Kind] = true
		if e.Item != nil {
			seenType[e.Item.Type] = true
		}
	}
	for _, k := range agent.Kinds() {
		if !seenKind[k] {
			t.Errorf("no %s event", k)
		}
	}
	for _, typ := range agent.ItemTypes() {
		if !seenType[typ] {
			t.Errorf("no %s item", typ)
		}
	}
	if last := st.all[len(st.all)-1]; last.Kind != agent.KindSessionEnded || last.Session.Reason != "closed" {
		t.Errorf("last event %+v", last)
	}
}

func TestApprovalAllowAndDeny(t *testing.T) {
	for _, c := range []struct {
		decision agent.Decision
		status   agent.ItemStatus
		reply    string
	}{
		{agent.Allow, agent.ItemDone, "The mock_search call was allowed (once)."},
		{agent.Deny, agent.ItemDeclined, "The mock_search call was denied: not today, so I did not run it."},
	} {
		t.Run(string(c.decision), func(t *testing.T) {
			st := start(t, New(Config{}), agent.StartRequest{})
			st.prompt(WordApproval)
			req := st.untilKind(agent.KindApprovalRequested)
			a := req.Approval
			if a.Kind != agent.ApprovalTool || a.Tool != ToolName || a.ItemID != "turn-1/tool" || !slices.Equal(a.Scopes, []agent.Scope{agent.ScopeOnce, agent.ScopeSession}) {
				t.Errorf("approval %+v", a)
			}
			r := agent.Resolution{ApprovalID: a.ID, Decision: c.decision, Reason: "not today", By: "tester"}
			if err := st.s.Resolve(ctxFor(t), r); err != nil {
				t.Fatal(err)
			}
			res := st.untilKind(agent.KindApprovalResolved).Resolution
			if res.Decision != c.decision || res.Cause != agent.CauseClient || res.By != "tester" {
				t.Errorf("resolution %+v", res)
			}
			tool := st.until(itemOf(agent.ItemToolCall, agent.KindItemCompleted))
			if tool.Item.Status != c.status {
				t.Errorf("tool item %s, want %s", tool.Item.Status, c.status)
			}
			end := st.untilKind(agent.KindTurnCompleted)
			if !strings.Contains(end.Turn.Text, c.reply) {
				t.Errorf("reply %q lacks %q", end.Turn.Text, c.reply)
			}
			// The first resolution wins; the second learns it.
			err := st.s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: a.ID, Decision: agent.Allow})
			var already *agent.AlreadyResolvedError
			if !errors.As(err, &already) || already.First.Decision != c.decision || already.First.By != "tester" {
				t.Errorf("second Resolve = %v", err)
			}
		})
	}
}

func TestResolveRefusesWhatDoesNotFit(t *testing.T) {
	st := start(t, New(Config{}), agent.StartRequest{})
	st.prompt(WordQuestion)
	q := st.untilKind(agent.KindApprovalRequested).Approval
	if q.Kind != agent.ApprovalQuestion || len(q.Question.Options) != 3 {
		t.Fatalf("question approval %+v", q)
	}
	for name, c := range map[string]struct {
		r    agent.Resolution
		want error
	}{
		"unknown approval": {agent.Resolution{ApprovalID: "nope", Decision: agent.Allow}, agent.ErrUnknownApproval},
		"no decision":      {agent.Resolution{ApprovalID: q.ID, Decision: "maybe"}, agent.ErrInvalidEvent},
		"always":           {agent.Resolution{ApprovalID: q.ID, Decision: agent.Allow, Scope: agent.ScopeAlways}, agent.ErrUnsupported},
		"unknown option":   {agent.Resolution{ApprovalID: q.ID, Decision: agent.Allow, Answers: []string{"purple"}}, ErrBadAnswer},
	} {
		if err := st.s.Resolve(ctxFor(t), c.r); !errors.Is(err, c.want) {
			t.Errorf("%s: Resolve = %v, want %v", name, err, c.want)
		}
	}
	if err := st.s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: q.ID, Decision: agent.Allow, Answers: []string{"blue", "red"}}); err != nil {
		t.Fatal(err)
	}
	item := st.until(itemOf(agent.ItemQuestion, agent.KindItemCompleted)).Item
	end := st.untilKind(agent.KindTurnCompleted)
	if item.Text != "Blue, Red" || !strings.Contains(end.Turn.Text, "You chose: Blue, Red.") {
		t.Errorf("question item %+v, reply %q", item, end.Turn.Text)
	}
}

// A session-scoped allow lets later calls of the tool run unasked.
func TestSessionScopeAllowsLaterCalls(t *testing.T) {
	st := start(t, New(Config{}), agent.StartRequest{})
	st.prompt(WordApproval)
	a := st.untilKind(agent.KindApprovalRequested).Approval
	if err := st.s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: a.ID, Decision: agent.Allow, Scope: agent.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	st.untilKind(agent.KindTurnCompleted)
	from := len(st.all)
	st.prompt(WordApproval + " again")
	end := st.untilKind(agent.KindTurnCompleted)
	for _, e := range st.all[from:] {
		if e.Kind == agent.KindApprovalRequested {
			t.Errorf("asked again: %+v", e.Approval)
		}
	}
	if end.Turn.Status != agent.TurnCompleted {
		t.Errorf("second turn %+v", end.Turn)
	}
}

// Closing with an approval pending resolves it (turn_ended), ends the
// turn and the session, and a late answer learns it.
func TestCloseWithPendingApproval(t *testing.T) {
	st := start(t, New(Config{}), agent.StartRequest{})
	st.prompt(WordApproval)
	a := st.untilKind(agent.KindApprovalRequested).Approval
	if err := st.s.Close(); err != nil {
		t.Fatal(err)
	}
	res := st.untilKind(agent.KindApprovalResolved).Resolution
	if res.Decision != agent.Deny || res.Cause != agent.CauseTurnEnded {
		t.Errorf("resolution %+v", res)
	}
	tool := st.until(itemOf(agent.ItemToolCall, agent.KindItemCompleted)).Item
	end := st.untilKind(agent.KindTurnCompleted)
	ended := st.untilKind(agent.KindSessionEnded)
	if tool.Status != agent.ItemDeclined || end.Turn.Status != agent.TurnInterrupted || ended.Session.Reason != "closed" {
		t.Errorf("tool %s, turn %+v, session %+v", tool.Status, end.Turn, ended.Session)
	}
	st.rest()
	err := st.s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: a.ID, Decision: agent.Allow})
	var already *agent.AlreadyResolvedError
	if !errors.As(err, &already) || already.First.Cause != agent.CauseTurnEnded {
		t.Errorf("Resolve after close = %v", err)
	}
	if err := st.s.Prompt(ctxFor(t), agent.Prompt{Text: "hi"}); !errors.Is(err, agent.ErrSessionEnded) {
		t.Errorf("Prompt after close = %v", err)
	}
}

// SLOW waits for the interrupt, with its command open; the command
// fails, the turn is interrupted, nothing was written, and the session
// takes the next prompt.
func TestInterruptSlowTurn(t *testing.T) {
	st := start(t, New(Config{}), agent.StartRequest{})
	if err := st.s.Interrupt(ctxFor(t)); !errors.Is(err, agent.ErrNoTurn) {
		t.Errorf("Interrupt with no turn = %v", err)
	}
	st.prompt(WordSlow)
	st.until(func(e agent.Event) bool { return e.Kind == agent.KindItemDelta && e.Delta.Field == agent.FieldOutput })
	if err := st.s.Prompt(ctxFor(t), agent.Prompt{Text: "meanwhile"}); !errors.Is(err, agent.ErrTurnInProgress) {
		t.Errorf("Prompt mid-turn = %v", err)
	}
	if err := st.s.Steer(ctxFor(t), agent.Prompt{Text: "hurry"}); err != nil {
		t.Fatal(err)
	}
	steer := st.until(itemOf(agent.ItemUserMessage, agent.KindItemCompleted))
	if steer.Item.Text != "hurry" {
		t.Errorf("steer item %+v", steer.Item)
	}
	if err := st.s.Interrupt(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	cmd := st.until(itemOf(agent.ItemCommand, agent.KindItemCompleted)).Item
	end := st.untilKind(agent.KindTurnCompleted)
	if cmd.Status != agent.ItemFailed || end.Turn.Status != agent.TurnInterrupted || end.Error.Code != agent.ErrorInterrupted {
		t.Errorf("command %s, turn %+v %+v", cmd.Status, end.Turn, end.Error)
	}
	if _, err := os.Stat(filepath.Join(st.dir, notesName)); !os.IsNotExist(err) {
		t.Errorf("an interrupted turn wrote %s (%v)", notesName, err)
	}
	st.prompt("again")
	if end := st.untilKind(agent.KindTurnCompleted); end.Turn.Status != agent.TurnCompleted || end.TurnID != "turn-2" {
		t.Errorf("next turn %+v", end)
	}
}

// An interrupt resolves a pending approval as interrupted.
func TestInterruptPendingApproval(t *testing.T) {
	st := start(t, New(Config{}), agent.StartRequest{})
	st.prompt(WordApproval)
	st.untilKind(agent.KindApprovalRequested)
	if err := st.s.Interrupt(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	res := st.untilKind(agent.KindApprovalResolved).Resolution
	end := st.untilKind(agent.KindTurnCompleted)
	if res.Cause != agent.CauseInterrupted || res.Decision != agent.Deny || end.Turn.Status != agent.TurnInterrupted {
		t.Errorf("resolution %+v, turn %+v", res, end.Turn)
	}
}

// A steer while the turn waits on an approval shows in the reply.
func TestSteerShowsInTheReply(t *testing.T) {
	st := start(t, New(Config{}), agent.StartRequest{})
	if err := st.s.Steer(ctxFor(t), agent.Prompt{Text: "x"}); !errors.Is(err, agent.ErrNoTurn) {
		t.Errorf("Steer with no turn = %v", err)
	}
	st.prompt(WordApproval)
	a := st.untilKind(agent.KindApprovalRequested).Approval
	if err := st.s.Steer(ctxFor(t), agent.Prompt{Text: "use tabs"}); err != nil {
		t.Fatal(err)
	}
	if err := st.s.Resolve(ctxFor(t), agent.Resolution{ApprovalID: a.ID, Decision: agent.Allow}); err != nil {
		t.Fatal(err)
	}
	if end := st.untilKind(agent.KindTurnCompleted); !strings.Contains(end.Turn.Text, `You steered: "use tabs".`) {
		t.Errorf("reply %q", end.Turn.Text)
	}
}

// A resumed conversation keeps its native id, items, turn count and
// workspace changes.
func TestResume(t *testing.T) {
	d := New(Config{})
	dir := t.TempDir()
	first := start(t, d, agent.StartRequest{Workspace: dir})
	first.prompt("one")
	first.untilKind(agent.KindTurnCompleted)
	id := first.s.NativeID()
	if _, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: dir, Resume: id}); !errors.Is(err, ErrConversationInUse) {
		t.Errorf("resume of an open conversation = %v", err)
	}
	_ = first.s.Close()
	first.rest()

	second := start(t, d, agent.StartRequest{Workspace: dir, Resume: id})
	if got := second.untilKind(agent.KindSessionStarted).Session.NativeID; got != id {
		t.Errorf("resumed native id %q, want %q", got, id)
	}
	second.prompt("two")
	end := second.untilKind(agent.KindTurnCompleted)
	if end.TurnID != "turn-2" || !strings.HasPrefix(end.Turn.Text, "Mock reply to turn 2:") {
		t.Errorf("resumed turn %s: %q", end.TurnID, end.Turn.Text)
	}
	msgs, _ := second.s.Messages(ctxFor(t))
	if len(msgs) != 14 || msgs[0].Text != "one" || msgs[7].Text != "two" {
		t.Errorf("Messages has %d items: %+v", len(msgs), msgs)
	}
	diff, err := second.s.Diff(ctxFor(t))
	want := "--- /dev/null\n+++ b/mock-notes.md\n@@ -0,0 +1,2 @@\n+turn 1: one\n+turn 2: two\n"
	if err != nil || len(diff) != 1 || diff[0].Kind != agent.ChangeAdd || diff[0].Diff != want {
		t.Errorf("Diff = %+v, %v", diff, err)
	}
	if _, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: dir, Resume: "mock-99"}); !errors.Is(err, ErrUnknownConversation) {
		t.Errorf("resume of an unknown conversation = %v", err)
	}
}

func TestStartRefusesWhatItCannotDo(t *testing.T) {
	d := New(Config{})
	if _, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: t.TempDir(), Fork: true, Resume: "mock-1"}); !errors.Is(err, agent.ErrUnsupported) {
		t.Errorf("fork = %v", err)
	}
	if _, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: t.TempDir(), Options: []byte(`{"speed":1}`)}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("options = %v", err)
	}
	c := d.Capabilities()
	if !c.Resume || !c.Steer || !c.Questions || !c.Diff || c.Fork || !slices.Equal(c.Scopes, []agent.Scope{agent.ScopeOnce, agent.ScopeSession}) {
		t.Errorf("capabilities %+v", c)
	}
}

// Pace waits on the injected timer between events, not on the wall clock.
func TestPaceWaitsOnTheInjectedTimer(t *testing.T) {
	tick := make(chan time.Time)
	d := New(Config{Pace: time.Hour, After: func(time.Duration) <-chan time.Time { return tick }})
	st := start(t, d, agent.StartRequest{})
	st.prompt("hi")
	st.until(itemOf(agent.ItemReasoning, agent.KindItemStarted))
	select {
	case e := <-st.ch:
		t.Fatalf("%s came before the tick", e.Kind)
	case <-time.After(50 * time.Millisecond):
	}
	tick <- time.Time{}
	if e, _ := st.next(); e.Kind != agent.KindItemDelta {
		t.Errorf("after the tick: %s", e.Kind)
	}
}

// A reader that does not keep up holds the turn back (backpressure) but
// never blocks the session's other methods.
func TestBackpressureHoldsTheTurnNotTheClient(t *testing.T) {
	d := New(Config{Outbox: 2})
	s, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Steer(ctxFor(t), agent.Prompt{Text: "more"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Interrupt(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	var last agent.Event
	n := 0
	for e, err := range s.Events(ctxFor(t)) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		last = e
	}
	if last.Kind != agent.KindSessionEnded || n > 12 {
		t.Errorf("%d events, last %s", n, last.Kind)
	}
}

func TestAppendDiff(t *testing.T) {
	for name, c := range map[string]struct {
		existed bool
		old     string
		want    string
	}{
		"new file":        {false, "", "--- /dev/null\n+++ b/f\n@@ -0,0 +1,1 @@\n+x\n"},
		"empty file":      {true, "", "--- a/f\n+++ b/f\n@@ -0,0 +1,1 @@\n+x\n"},
		"two lines":       {true, "a\nb\n", "--- a/f\n+++ b/f\n@@ -2,0 +3,1 @@\n+x\n"},
		"no last newline": {true, "a\nb", "--- a/f\n+++ b/f\n@@ -2,1 +2,2 @@\n-b\n\\ No newline at end of file\n+b\n+x\n"},
	} {
		if got := appendDiff("f", c.existed, c.old, []string{"x"}); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", name, got, c.want)
		}
	}
}

// Prompts racing Close either start a turn that Close ends or are
// refused with ErrSessionEnded; the events always end with session.ended.
func TestCloseRacesPrompt(t *testing.T) {
	for range 20 {
		st := start(t, New(Config{}), agent.StartRequest{})
		done := make(chan error, 1)
		go func() { done <- st.s.Prompt(ctxFor(t), agent.Prompt{Text: WordSlow}) }()
		_ = st.s.Close()
		if err := <-done; err != nil && !errors.Is(err, agent.ErrSessionEnded) {
			t.Fatalf("Prompt = %v", err)
		}
		st.rest()
		if last := st.all[len(st.all)-1]; last.Kind != agent.KindSessionEnded {
			t.Fatalf("last event %s", last.Kind)
		}
	}
}

// A resume with {"turns": N} of a conversation this Driver never held
// (another process's) continues from that script position; turns without
// a resume is refused.
func TestResumeFromScriptPosition(t *testing.T) {
	d := New(Config{})
	st := start(t, d, agent.StartRequest{Workspace: t.TempDir(), Resume: "mock-7", Options: []byte(`{"turns":3}`)})
	if got := st.untilKind(agent.KindSessionStarted).Session.NativeID; got != "mock-7" {
		t.Errorf("native id %q", got)
	}
	st.prompt("next")
	if end := st.untilKind(agent.KindTurnCompleted); end.TurnID != "turn-4" || !strings.HasPrefix(end.Turn.Text, "Mock reply to turn 4:") {
		t.Errorf("continued turn %s: %q", end.TurnID, end.Turn.Text)
	}
	for _, opts := range []string{`{"turns":2}`, `{"turns":-1}`, `{"turns":"x"}`} {
		if _, err := d.Start(ctxFor(t), agent.StartRequest{Workspace: t.TempDir(), Options: []byte(opts)}); !errors.Is(err, ErrBadOptions) {
			t.Errorf("%s without a resume = %v", opts, err)
		}
	}
}

// Configure switches the mode and the model between turns: in plan mode
// a turn runs, writes and calls nothing, and a model set names itself.
// A mode the mock lacks is refused, typed.
func TestConfigureModeAndModel(t *testing.T) {
	st := start(t, New(Config{}), agent.StartRequest{})
	c := st.s.(agent.Configurable)
	if err := c.Configure(t.Context(), agent.Settings{Mode: "yolo"}); !errors.Is(err, agent.ErrInvalidSettings) {
		t.Fatalf("an unknown mode: %v", err)
	}
	if err := c.Configure(t.Context(), agent.Settings{Mode: ModePlan, Model: "mock-2"}); err != nil {
		t.Fatal(err)
	}
	st.prompt(WordApproval + " do it")
	end := st.until(func(e agent.Event) bool {
		switch {
		case e.Kind == agent.KindApprovalRequested:
			t.Fatal("plan mode asked for a tool call")
		case e.Item != nil && (e.Item.Type == agent.ItemFileChange || e.Item.Type == agent.ItemCommand || e.Item.Type == agent.ItemToolCall):
			t.Fatalf("plan mode ran a %s", e.Item.Type)
		}
		return e.Kind == agent.KindTurnCompleted
	})
	if !strings.Contains(end.Turn.Text, "Plan mode") || !strings.Contains(end.Turn.Text, "Model: mock-2.") {
		t.Fatalf("reply %q", end.Turn.Text)
	}
	if _, err := os.Stat(filepath.Join(st.dir, notesName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("plan mode wrote its notes: %v", err)
	}
	if err := c.Configure(t.Context(), agent.Settings{Mode: ModeDefault}); err != nil {
		t.Fatal(err)
	}
	st.prompt("hello")
	end = st.untilKind(agent.KindTurnCompleted)
	if strings.Contains(end.Turn.Text, "Plan mode") {
		t.Fatalf("back in the default mode: %q", end.Turn.Text)
	}
	if _, err := os.Stat(filepath.Join(st.dir, notesName)); err != nil {
		t.Fatalf("the default mode wrote no notes: %v", err)
	}
}

// A prompt's images show in the reply: their count, types and sizes; an
// image the models would not take is refused before the turn starts.
func TestImagesShowInTheReply(t *testing.T) {
	d := New(Config{})
	if !d.Capabilities().Images {
		t.Fatal("the mock takes images")
	}
	st := start(t, d, agent.StartRequest{})
	bad := agent.Prompt{Text: "look", Images: []agent.Image{{MediaType: "image/bmp", Data: []byte{1}}}}
	if err := st.s.Prompt(ctxFor(t), bad); !errors.Is(err, agent.ErrInvalidImage) {
		t.Fatalf("a bmp: %v", err)
	}
	p := agent.Prompt{Text: "look", Images: []agent.Image{
		{MediaType: "image/png", Data: make([]byte, 68)}, {MediaType: "image/jpeg", Data: make([]byte, 1024)}}}
	if err := st.s.Prompt(ctxFor(t), p); err != nil {
		t.Fatal(err)
	}
	end := st.untilKind(agent.KindTurnCompleted)
	if want := "You sent 2 images (image/png 68 bytes, image/jpeg 1024 bytes)."; !strings.Contains(end.Turn.Text, want) {
		t.Errorf("reply %q, want it to say %q", end.Turn.Text, want)
	}
}

// The mock takes no MCP servers, and says so.
func TestMCPServersRefused(t *testing.T) {
	d := New(Config{})
	if caps := d.Capabilities(); len(caps.MCP) != 0 {
		t.Fatalf("capabilities MCP %v", caps.MCP)
	}
	_, err := d.Start(t.Context(), agent.StartRequest{MCPServers: []agent.MCPServer{{Name: "x", Transport: agent.MCPStdio, Command: "/bin/cat"}}})
	var unsupported *agent.UnsupportedError
	if !errors.As(err, &unsupported) {
		t.Fatalf("Start with an MCP server: %v", err)
	}
}
