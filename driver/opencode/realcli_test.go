package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver"
	"github.com/tetherhq/tether/internal/testing/testenv"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A text turn: session.started with the native id, the prompt echoed as a
// user message, the answer streamed as deltas of one item and completed
// whole, usage, and the turn's text; Messages has both.
func TestRealCLITextTurn(t *testing.T) {
	env := newRealEnv(t, nil)
	r := env.start(t, agent.StartRequest{})
	first, _ := r.next(10 * time.Second)
	if first.Kind != agent.KindSessionStarted || first.Session.Agent != "opencode" || first.Session.NativeID != r.s.NativeID() || !strings.HasPrefix(r.s.NativeID(), "ses_") {
		t.Fatalf("first event %+v, native id %q", first, r.s.NativeID())
	}
	r.prompt("SAY hello from the fake")
	end := r.turnEnd()
	if end.Turn.Status != agent.TurnCompleted || end.Turn.Text != "hello from the fake" || end.Usage == nil || end.Usage.InputTokens == 0 {
		t.Fatalf("turn.completed %+v usage %+v error %+v", end.Turn, end.Usage, end.Error)
	}
	var deltas strings.Builder
	var started, completed *agent.Item
	var user bool
	for _, e := range r.seen {
		switch {
		case e.Kind == agent.KindItemStarted && e.Item.Type == agent.ItemMessage:
			started = e.Item
		case e.Kind == agent.KindItemDelta:
			if started == nil || e.Delta.ItemID != started.ID {
				t.Errorf("delta %+v before its item started", e.Delta)
			}
			deltas.WriteString(e.Delta.Text)
		case e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemMessage:
			completed = e.Item
		case e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemUserMessage:
			user = e.Item.Text == "SAY hello from the fake"
		}
		if e.Kind != agent.KindSessionStarted && len(e.Raw) == 0 && e.Kind != agent.KindTurnStarted {
			t.Errorf("%s has no raw payload", e.Kind)
		}
	}
	if started == nil || completed == nil || completed.ID != started.ID || completed.Text != "hello from the fake" || deltas.String() != completed.Text {
		t.Errorf("message started %+v completed %+v deltas %q", started, completed, deltas.String())
	}
	if !user {
		t.Errorf("no user_message item for the prompt; seen %s", kinds(r.seen))
	}
	for _, pid := range testenv.PIDsWithEnv("HOME=" + env.home) {
		status, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		for line := range strings.SplitSeq(string(status), "\n") {
			if strings.HasPrefix(line, "VmRSS:") {
				t.Logf("server process %d %s", pid, strings.Join(strings.Fields(line), " "))
			}
		}
	}
	items, err := r.s.Messages(ctxT(t))
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	if len(items) != 2 || items[0].Type != agent.ItemUserMessage || items[0].Text != "SAY hello from the fake" || items[1].Type != agent.ItemMessage || items[1].Text != "hello from the fake" {
		t.Errorf("Messages %+v", items)
	}
	if err := r.s.Prompt(ctxT(t), agent.Prompt{Text: "SAY second"}); err != nil {
		t.Fatalf("second prompt: %v", err)
	}
	if err := r.s.Prompt(ctxT(t), agent.Prompt{Text: "SAY third"}); !errors.Is(err, agent.ErrTurnInProgress) {
		t.Errorf("prompt during a turn: %v, want ErrTurnInProgress", err)
	}
	if end := r.turnEnd(); end.Turn.Text != "second" {
		t.Errorf("second turn %+v", end.Turn)
	}
	if err := r.s.Steer(ctxT(t), agent.Prompt{Text: "x"}); !errors.Is(err, agent.ErrUnsupported) {
		t.Errorf("Steer: %v", err)
	}
	if err := r.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	r.rest()
	last := r.seen[len(r.seen)-1]
	if last.Kind != agent.KindSessionEnded || last.Session.Reason != "closed" {
		t.Errorf("last event %+v", last)
	}
	waitNoProcs(t, "HOME="+env.home)
	// Offline: the model calls, and the npm registry request OpenCode
	// makes on every start (routed to the fake, which answers 404).
	for _, req := range env.fake.Requests() {
		if req.Path != "/v1/chat/completions" && !strings.HasPrefix(req.Path, "/npm/") {
			t.Errorf("unexpected request %s %s", req.Method, req.Path)
		}
		if strings.HasPrefix(req.Path, "/npm/") {
			t.Logf("npm registry request: %s %s", req.Method, req.Path)
		}
	}
}

// toolResults is the text of every tool result the fake model was sent.
func toolResults(t *testing.T, env *realEnv) []string {
	t.Helper()
	var out []string
	for _, r := range env.fake.Requests() {
		if r.Path != "/v1/chat/completions" {
			continue
		}
		var body struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("request body: %v", err)
		}
		for _, m := range body.Messages {
			if m.Role == "tool" {
				out = append(out, string(m.Content))
			}
		}
	}
	return out
}

// A shell command approved once: the approval names the command and its
// item, the command runs (its output in the completed item, the fake
// model sent the result), and a second resolution is refused with the
// first.
func TestRealCLIShellApproved(t *testing.T) {
	env := newRealEnv(t, nil)
	r := env.start(t, agent.StartRequest{})
	r.prompt("USE_SHELL echo approved-run")
	req := r.until("approval.requested", kindIs(agent.KindApprovalRequested)).Approval
	if req.Tool != "bash" || req.Title != "bash: echo approved-run" || req.ItemID == "" || len(req.Scopes) != 2 || req.TurnID == "" {
		t.Fatalf("approval %+v", req)
	}
	allow := agent.Resolution{ApprovalID: req.ID, Decision: agent.Allow, Scope: agent.ScopeOnce, By: "tester"}
	if err := r.s.Resolve(ctxT(t), allow); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	var already *agent.AlreadyResolvedError
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: req.ID, Decision: agent.Deny}); !errors.As(err, &already) || already.First.Decision != agent.Allow || already.First.By != "tester" {
		t.Errorf("second Resolve: %v", err)
	}
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: "per_nope", Decision: agent.Allow}); !errors.Is(err, agent.ErrUnknownApproval) {
		t.Errorf("Resolve of an unknown approval: %v", err)
	}
	end := r.turnEnd()
	if end.Turn.Status != agent.TurnCompleted || end.Turn.Text != "tool said: approved-run" {
		t.Errorf("turn %+v error %+v", end.Turn, end.Error)
	}
	var resolved int
	var cmd *agent.Item
	for _, e := range r.seen {
		if e.Kind == agent.KindApprovalResolved {
			resolved++
			if e.Resolution.Decision != agent.Allow || e.Resolution.Cause != agent.CauseClient || e.Resolution.Scope != agent.ScopeOnce {
				t.Errorf("resolution %+v", e.Resolution)
			}
		}
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand {
			cmd = e.Item
		}
	}
	if resolved != 1 {
		t.Errorf("%d approval.resolved, want 1", resolved)
	}
	if cmd == nil || cmd.ID != req.ItemID || cmd.Status != agent.ItemDone || cmd.Command.Command != "echo approved-run" || cmd.Command.Output != "approved-run\n" || cmd.Command.ExitCode == nil || *cmd.Command.ExitCode != 0 {
		t.Errorf("command item %+v %+v", cmd, cmd.Command)
	}
	if res := toolResults(t, env); len(res) != 1 || !strings.Contains(res[0], "approved-run") {
		t.Errorf("tool results the model got: %q", res)
	}

	// Allowed always: OpenCode keeps the request's pattern ("echo *"), so
	// a like command later runs without asking.
	r.prompt("USE_SHELL echo second-run")
	req = r.until("approval.requested", kindIs(agent.KindApprovalRequested)).Approval
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: req.ID, Decision: agent.Allow, Scope: agent.ScopeAlways}); err != nil {
		t.Fatalf("Resolve always: %v", err)
	}
	r.turnEnd()
	mark := len(r.seen)
	r.prompt("USE_SHELL echo third-run")
	if end := r.turnEnd(); end.Turn.Text != "tool said: third-run" {
		t.Errorf("third turn %+v %+v", end.Turn, end.Error)
	}
	if asked := find(r.seen[mark:], agent.KindApprovalRequested, ""); len(asked) != 0 {
		t.Errorf("asked again after an always: %+v", asked[0].Approval)
	}
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: "x", Decision: agent.Allow, Scope: agent.ScopeSession}); !errors.Is(err, agent.ErrUnsupported) {
		t.Errorf("a session scope: %v, want ErrUnsupported", err)
	}
}

// A shell command denied: it does not run, its item is declined, and the
// model is told.
func TestRealCLIShellDenied(t *testing.T) {
	env := newRealEnv(t, nil)
	r := env.start(t, agent.StartRequest{})
	marker := filepath.Join(env.ws, "marker")
	r.prompt("USE_SHELL touch " + marker)
	req := r.until("approval.requested", kindIs(agent.KindApprovalRequested)).Approval
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: req.ID, Decision: agent.Deny, Reason: "not in this test"}); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	end := r.turnEnd()
	if end.Turn.Status != agent.TurnCompleted {
		t.Errorf("turn %+v error %+v", end.Turn, end.Error)
	}
	var cmd *agent.Item
	for _, e := range r.seen {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemCommand {
			cmd = e.Item
		}
	}
	if cmd == nil || cmd.Status != agent.ItemDeclined || cmd.ID != req.ItemID {
		t.Errorf("command item %+v", cmd)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the denied command ran: %v", err)
	}
	if res := toolResults(t, env); len(res) != 1 || !strings.Contains(res[0], "not in this test") {
		t.Errorf("tool results the model got: %q", res)
	}
}

// An interrupt of a slow turn: the turn completes interrupted, the model's
// stream is dropped, and the session takes the next prompt.
func TestRealCLIInterrupt(t *testing.T) {
	env := newRealEnv(t, nil)
	r := env.start(t, agent.StartRequest{})
	if err := r.s.Interrupt(ctxT(t)); !errors.Is(err, agent.ErrNoTurn) {
		t.Errorf("Interrupt with no turn: %v", err)
	}
	r.prompt("SLOW")
	r.until("a delta", kindIs(agent.KindItemDelta))
	if err := r.s.Interrupt(ctxT(t)); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	end := r.turnEnd()
	if end.Turn.Status != agent.TurnInterrupted {
		t.Fatalf("turn %+v error %+v", end.Turn, end.Error)
	}
	for _, e := range r.seen {
		if e.Kind == agent.KindItemStarted {
			found := false
			for _, c := range r.seen {
				found = found || (c.Kind == agent.KindItemCompleted && c.Item.ID == e.Item.ID)
			}
			if !found {
				t.Errorf("item %s started and never completed", e.Item.ID)
			}
		}
	}
	r.prompt("SAY after the interrupt")
	if end := r.turnEnd(); end.Turn.Status != agent.TurnCompleted || end.Turn.Text != "after the interrupt" {
		t.Errorf("next turn %+v error %+v", end.Turn, end.Error)
	}

	// An interrupt clears a pending approval: resolved as interrupted,
	// and the command never runs.
	marker := filepath.Join(env.ws, "interrupted")
	r.prompt("USE_SHELL touch " + marker)
	req := r.until("approval.requested", kindIs(agent.KindApprovalRequested)).Approval
	if err := r.s.Interrupt(ctxT(t)); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	end = r.turnEnd()
	if end.Turn.Status != agent.TurnInterrupted {
		t.Errorf("turn with a pending approval %+v %+v", end.Turn, end.Error)
	}
	res := find(r.seen, agent.KindApprovalResolved, "")
	if len(res) != 1 || res[0].Resolution.ApprovalID != req.ID || res[0].Resolution.Cause != agent.CauseInterrupted || res[0].Resolution.Decision != agent.Deny {
		t.Errorf("resolutions %+v", res)
	}
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: req.ID, Decision: agent.Allow}); !errors.Is(err, agent.ErrAlreadyResolved) {
		t.Errorf("Resolve after the interrupt: %v", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran: %v", err)
	}
	r.prompt("SAY and on")
	if end := r.turnEnd(); end.Turn.Text != "and on" {
		t.Errorf("turn after %+v %+v", end.Turn, end.Error)
	}

	// An interrupt of a running command ends the command's process.
	r.prompt("USE_SHELL sleep 4242")
	req = r.until("approval.requested", kindIs(agent.KindApprovalRequested)).Approval
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: req.ID, Decision: agent.Allow}); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	for deadline := time.Now().Add(20 * time.Second); len(testenv.PIDsWithArg("4242")) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
	}
	if err := r.s.Interrupt(ctxT(t)); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	if end := r.turnEnd(); end.Turn.Status != agent.TurnInterrupted {
		t.Errorf("turn %+v %+v", end.Turn, end.Error)
	}
	if cmd := find(r.seen, agent.KindItemCompleted, agent.ItemCommand); cmd[len(cmd)-1].Item.Status != agent.ItemFailed {
		t.Errorf("interrupted command %+v", cmd[len(cmd)-1].Item)
	}
	for deadline := time.Now().Add(10 * time.Second); len(testenv.PIDsWithArg("4242")) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the interrupted command still runs: %v", testenv.PIDsWithArg("4242"))
		}
	}
}

// A provider error: the turn fails with api_error and the status.
func TestRealCLIProviderError(t *testing.T) {
	env := newRealEnv(t, nil)
	r := env.start(t, agent.StartRequest{})
	r.prompt("ERROR_400")
	end := r.turnEnd()
	if end.Turn.Status != agent.TurnFailed || end.Error == nil || end.Error.Code != agent.ErrorAPI || end.Error.Status != 400 {
		t.Fatalf("turn %+v error %+v", end.Turn, end.Error)
	}
}

// A provider that keeps failing: OpenCode retries a 500 with no end, so
// the turn timeout aborts the turn, which fails with turn_limit; the
// retries were reported as api errors on the way. The limit leaves room
// for OpenCode's first retry on a loaded machine: with 4 s, four runs at
// once on two CPUs had the turn aborted before it in 8 of 12.
func TestRealCLITurnTimeout(t *testing.T) {
	env := newRealEnv(t, func(c *driver.Config) { c.TurnTimeout = 10 * time.Second })
	r := env.start(t, agent.StartRequest{})
	r.prompt("ERROR_500")
	retry := r.until("a retry", func(e agent.Event) bool { return e.Kind == agent.KindError || e.Kind == agent.KindTurnCompleted })
	if retry.Kind == agent.KindTurnCompleted {
		t.Fatalf("the turn ended before any retry: %+v error %+v", retry.Turn, retry.Error)
	}
	if retry.Error.Code != agent.ErrorAPI || !retry.Error.Retrying {
		t.Errorf("retry error %+v", retry.Error)
	}
	end := r.turnEnd()
	if end.Turn.Status != agent.TurnFailed || end.Error == nil || end.Error.Code != agent.ErrorTurnLimit {
		t.Fatalf("turn %+v error %+v", end.Turn, end.Error)
	}
	r.prompt("SAY still here")
	if end := r.turnEnd(); end.Turn.Text != "still here" {
		t.Errorf("next turn %+v error %+v", end.Turn, end.Error)
	}
}

// The server killed mid-turn: open items fail, the turn fails with
// agent_exited, the session ends exited, and nothing is left running.
func TestRealCLIKilled(t *testing.T) {
	env := newRealEnv(t, nil)
	r := env.start(t, agent.StartRequest{})
	r.prompt("SLOW")
	r.until("a delta", kindIs(agent.KindItemDelta))
	pids := testenv.PIDsWithEnv("HOME=" + env.home)
	if len(pids) == 0 {
		t.Fatal("no server process found")
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	end := r.turnEnd()
	if end.Turn.Status != agent.TurnFailed || end.Error == nil || end.Error.Code != agent.ErrorAgentExit {
		t.Fatalf("turn %+v error %+v", end.Turn, end.Error)
	}
	var failed bool
	for _, e := range r.seen {
		failed = failed || (e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemMessage && e.Item.Status == agent.ItemFailed)
	}
	if !failed {
		t.Errorf("the streaming message did not fail: %s", kinds(r.seen))
	}
	r.rest()
	last := r.seen[len(r.seen)-1]
	if last.Kind != agent.KindSessionEnded || last.Session.Reason != "exited" || last.Error == nil || last.Error.Code != agent.ErrorAgentExit {
		t.Errorf("last event %+v", last)
	}
	if err := r.s.Prompt(ctxT(t), agent.Prompt{Text: "SAY x"}); !errors.Is(err, agent.ErrSessionEnded) {
		t.Errorf("Prompt after the end: %v", err)
	}
	waitNoProcs(t, "HOME="+env.home)
}

// Close with an approval pending: the approval is resolved as the turn's
// end, the command that waited for it completes declined (it never ran),
// the turn is interrupted (the host ended it; it did not fail), the
// session ends closed, nothing is left running.
func TestRealCLICloseWithPendingApproval(t *testing.T) {
	env := newRealEnv(t, nil)
	r := env.start(t, agent.StartRequest{})
	r.prompt("USE_SHELL echo never")
	req := r.until("approval.requested", kindIs(agent.KindApprovalRequested)).Approval
	if err := r.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	r.rest()
	var resolved *agent.Resolution
	for _, e := range r.seen {
		if e.Kind == agent.KindApprovalResolved {
			resolved = e.Resolution
		}
	}
	if resolved == nil || resolved.ApprovalID != req.ID || resolved.Decision != agent.Deny || resolved.Cause != agent.CauseTurnEnded {
		t.Errorf("resolution %+v", resolved)
	}
	n := len(r.seen)
	if r.seen[n-2].Kind != agent.KindTurnCompleted || r.seen[n-2].Turn.Status != agent.TurnInterrupted || r.seen[n-2].Error != nil ||
		r.seen[n-1].Kind != agent.KindSessionEnded || r.seen[n-1].Session.Reason != "closed" {
		t.Errorf("last events %s", kinds(r.seen[n-2:]))
	}
	for _, e := range r.seen {
		if e.Kind == agent.KindItemCompleted && e.Item.ID == req.ItemID && e.Item.Status != agent.ItemDeclined {
			t.Errorf("the command that waited completed %s", e.Item.Status)
		}
	}
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: req.ID, Decision: agent.Allow}); !errors.Is(err, agent.ErrAlreadyResolved) {
		t.Errorf("Resolve after Close: %v", err)
	}
	waitNoProcs(t, "HOME="+env.home)
}

// Resume by native id in a new session (a new server): its Messages show
// the first session's turn, and the model gets the history.
func TestRealCLIResume(t *testing.T) {
	env := newRealEnv(t, nil)
	first := env.start(t, agent.StartRequest{})
	first.prompt("SAY one")
	firstEnd := first.turnEnd()
	native := first.s.NativeID()
	if err := first.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	first.rest()

	second := env.start(t, agent.StartRequest{Resume: native})
	if second.s.NativeID() != native {
		t.Fatalf("resumed native id %q, want %q", second.s.NativeID(), native)
	}
	items, err := second.s.Messages(ctxT(t))
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	if len(items) != 2 || items[0].Text != "SAY one" || items[1].Text != "one" {
		t.Fatalf("resumed Messages %+v", items)
	}
	second.prompt("SAY two")
	if end := second.turnEnd(); end.Turn.Text != "two" {
		t.Errorf("resumed turn %+v", end.Turn)
	} else if firstEnd.TurnID != native+"/t1" || end.TurnID != native+"/t2" {
		t.Errorf("turn ids %q, then %q after the resume; want them to go on counting", firstEnd.TurnID, end.TurnID)
	}
	if users := find(second.seen, agent.KindItemCompleted, agent.ItemUserMessage); len(users) != 1 || users[0].Item.Text != "SAY two" {
		t.Errorf("the resumed session's events report %d prompts: %s", len(users), kinds(second.seen))
	}
	items, err = second.s.Messages(ctxT(t))
	if err != nil || len(items) != 4 || items[3].Text != "two" {
		t.Errorf("Messages after the resumed turn: %+v, %v", items, err)
	}

	forked := env.start(t, agent.StartRequest{Resume: native, Fork: true})
	if forked.s.NativeID() == native || forked.s.NativeID() == "" {
		t.Errorf("fork's native id %q", forked.s.NativeID())
	}
	if items, err := forked.s.Messages(ctxT(t)); err != nil || len(items) != 4 {
		t.Errorf("forked Messages %+v, %v", items, err)
	}

	before := len(testenv.PIDsWithEnv("HOME=" + env.home))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = env.driver.Start(ctx, agent.StartRequest{Workspace: env.ws, Home: env.home, Resume: "ses_nosuchsession"})
	if !errors.Is(err, oc.ErrNotFound) {
		t.Fatalf("resume of an unknown session: %v, want oc.ErrNotFound", err)
	}
	if after := len(testenv.PIDsWithEnv("HOME=" + env.home)); after != before {
		t.Errorf("%d processes after a failed resume, %d before", after, before)
	}
}

// Diff after a file change: OpenCode's own diff names the file the
// approved command wrote, as added, with its patch.
func TestRealCLIDiff(t *testing.T) {
	env := newRealEnv(t, nil)
	gitWorkTree(t, env.ws)
	r := env.start(t, agent.StartRequest{})
	r.prompt("USE_SHELL printf 'hello\\n' > hello.txt")
	req := r.until("approval.requested", kindIs(agent.KindApprovalRequested)).Approval
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: req.ID, Decision: agent.Allow}); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	r.turnEnd()
	if b, err := os.ReadFile(filepath.Join(env.ws, "hello.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("hello.txt: %q, %v", b, err)
	}
	// OpenCode writes a turn's summary just after the turn ends (after
	// session.idle), so a Diff at once may come before it.
	var changes []agent.FileChange
	for deadline := time.Now().Add(5 * time.Second); len(changes) == 0 && time.Now().Before(deadline); {
		var err error
		if changes, err = r.s.Diff(ctxT(t)); err != nil {
			t.Fatalf("Diff: %v", err)
		}
		if len(changes) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if len(changes) != 1 || changes[0].Path != "hello.txt" || changes[0].Kind != agent.ChangeAdd || !strings.Contains(changes[0].Diff, "+hello") {
		t.Errorf("Diff %+v; events %s", changes, kinds(r.seen))
	}
}

// gitWorkTree makes dir a git work tree with one commit: OpenCode tracks
// changes with snapshots of a git work tree; outside one its diff is always
// empty and its steps have no patch parts.
func gitWorkTree(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start"}} {
		git := exec.Command("git", args...)
		git.Dir = dir
		if out, err := git.CombinedOutput(); err != nil {
			t.Skipf("git %v: %v: %s", args, err, out)
		}
	}
}

// A file written with the write tool is one file_change (the tool's,
// added), though the step's patch names the file too; a file a shell
// command writes is a file_change from the patch alone.
func TestRealCLIWriteIsOneFileChange(t *testing.T) {
	env := newRealEnv(t, nil)
	gitWorkTree(t, env.ws)
	r := env.start(t, agent.StartRequest{})
	path := filepath.Join(env.ws, "hello.txt")
	r.prompt(`USE_TOOL write {"filePath":"` + path + `","content":"hello\n"}`)
	from := len(r.seen)
	r.turnAllowing()
	changes := find(r.seen[from:], agent.KindItemCompleted, agent.ItemFileChange)
	if len(changes) != 1 || len(changes[0].Item.Changes) != 1 || changes[0].Item.Changes[0].Path != path || changes[0].Item.Changes[0].Kind != agent.ChangeAdd {
		t.Fatalf("a write's file changes: %v; events %s", changedPaths(changes), kinds(r.seen[from:]))
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello\n" {
		t.Fatalf("hello.txt: %q, %v", b, err)
	}

	r.prompt("USE_SHELL printf 'bye\\n' > bye.txt")
	from = len(r.seen)
	r.turnAllowing()
	changes = find(r.seen[from:], agent.KindItemCompleted, agent.ItemFileChange)
	if len(changes) != 1 || len(changes[0].Item.Changes) != 1 || changes[0].Item.Changes[0].Path != filepath.Join(env.ws, "bye.txt") {
		t.Errorf("a shell command's file changes: %v; events %s", changedPaths(changes), kinds(r.seen[from:]))
	}
}

// changedPaths are the changes of file_change events, one list each.
func changedPaths(evs []agent.Event) [][]agent.FileChange {
	var out [][]agent.FileChange
	for _, e := range evs {
		out = append(out, e.Item.Changes)
	}
	return out
}

// cutStream drops the session's event stream as a network fault would.
func cutStream(t *testing.T, s agent.Session) {
	t.Helper()
	ss := s.(*session)
	ss.mu.Lock()
	st := ss.stream
	ss.mu.Unlock()
	st.cancel()
}

// countItems counts item.started and item.completed per item id.
func countItems(evs []agent.Event) (started, completed map[string]int) {
	started, completed = map[string]int{}, map[string]int{}
	for _, e := range evs {
		switch e.Kind {
		case agent.KindItemStarted:
			started[e.Item.ID]++
		case agent.KindItemCompleted:
			completed[e.Item.ID]++
		}
	}
	return started, completed
}

// The event stream dropped and opened again: a whole turn missed while it
// was down is recovered from the session's messages (the prompt, the
// answer, the turn's end), a stream cut mid-answer loses nothing, and no
// item is reported twice.
func TestRealCLIReconnect(t *testing.T) {
	env := newRealEnv(t, nil)
	env.driver.(*Driver).reconnectWait = 3 * time.Second
	r := env.start(t, agent.StartRequest{})
	r.prompt("SAY warm up")
	r.turnEnd()

	cutStream(t, r.s)
	r.prompt("SAY while away")
	end := r.turnEnd()
	if end.Turn.Status != agent.TurnCompleted || end.Turn.Text != "while away" {
		t.Errorf("missed turn %+v %+v", end.Turn, end.Error)
	}

	env.driver.(*Driver).reconnectWait = 0
	r.prompt("SLOW")
	r.until("a delta", kindIs(agent.KindItemDelta))
	cutStream(t, r.s)
	end = r.turnEnd()
	if end.Turn.Status != agent.TurnCompleted || !strings.HasPrefix(end.Turn.Text, "tick 1 tick 2 ") || !strings.HasSuffix(end.Turn.Text, "tick 40") {
		t.Errorf("cut turn %+v %+v", end.Turn, end.Error)
	}

	started, completed := countItems(r.seen)
	for id, n := range completed {
		if n != 1 || started[id] > 1 {
			t.Errorf("item %s started %d and completed %d times", id, started[id], n)
		}
	}
	var users, messages []string
	for _, e := range r.seen {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemUserMessage {
			users = append(users, e.Item.Text)
		}
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemMessage {
			messages = append(messages, e.Item.Text)
		}
	}
	if strings.Join(users, "|") != "SAY warm up|SAY while away|SLOW" || len(messages) != 3 || messages[1] != "while away" || messages[2] != end.Turn.Text {
		t.Errorf("users %q messages %q", users, messages)
	}
	if n := len(find(r.seen, agent.KindTurnCompleted, "")); n != 3 {
		t.Errorf("%d turns completed, want 3", n)
	}
}

// The question tool: its question.asked is a question approval (the first
// question, options numbered from 0), an answer that is no option is
// refused with the question still open, and the chosen option reaches the
// model as the tool's result; a dismissed question is declined.
func TestRealCLIQuestion(t *testing.T) {
	env := newRealEnv(t, nil)
	r := env.start(t, agent.StartRequest{})
	ask := `USE_TOOL question {"questions":[{"question":"Which database should the service use?","header":"Database",` +
		`"options":[{"label":"Postgres","description":"relational"},{"label":"SQLite","description":"embedded"}]}]}`
	r.prompt(ask)
	req := r.until("approval.requested", kindIs(agent.KindApprovalRequested)).Approval
	if req.Kind != agent.ApprovalQuestion || req.Question == nil || req.Question.Prompt != "Which database should the service use?" ||
		len(req.Question.Options) != 2 || req.Question.Options[1].Label != "SQLite" {
		t.Fatalf("approval %+v", req)
	}
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: req.ID, Decision: agent.Allow, Answers: []string{"9"}}); !errors.Is(err, agent.ErrBadAnswer) {
		t.Fatalf("an answer that is no option: %v", err)
	}
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: req.ID, Decision: agent.Allow, Answers: []string{"1"}}); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	end := r.turnEnd()
	if end.Turn.Status != agent.TurnCompleted || !strings.Contains(end.Turn.Text, "SQLite") || strings.Contains(end.Turn.Text, "Postgres") {
		t.Errorf("turn %+v error %+v", end.Turn, end.Error)
	}
	var q *agent.Item
	for _, e := range r.seen {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemQuestion {
			q = e.Item
		}
	}
	if q == nil || q.Question == nil || q.Question.Prompt != req.Question.Prompt || q.Status != agent.ItemDone {
		t.Errorf("question item %+v", q)
	}

	mark := len(r.seen)
	r.prompt(ask)
	req = r.until("approval.requested", kindIs(agent.KindApprovalRequested)).Approval
	if err := r.s.Resolve(ctxT(t), agent.Resolution{ApprovalID: req.ID, Decision: agent.Deny}); err != nil {
		t.Fatalf("dismiss: %v", err)
	}
	r.turnEnd()
	var resolved *agent.Resolution
	for _, e := range r.seen[mark:] {
		if e.Kind == agent.KindApprovalResolved {
			resolved = e.Resolution
		}
	}
	if resolved == nil || resolved.Decision != agent.Deny {
		t.Errorf("dismissed question resolved %+v", resolved)
	}
}
