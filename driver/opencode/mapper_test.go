package opencode

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// fixedClock is a clock that moves one second per reading.
func fixedClock() func() time.Time {
	t := time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

// replay maps a captured /event stream as a session would: the session is
// the first one the capture creates; every event out is validated.
func replay(t *testing.T, name string) []agent.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := oc.NewEventReader(f, 0)
	var m *mapper
	var out []agent.Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p, ok := ev.Payload.(*oc.SessionCreated); ok && m == nil {
			m = newMapper(p.Info.ID, fixedClock())
		}
		if m == nil || ev.IsNoise() || ev.SessionID() != m.session {
			continue
		}
		out = append(out, m.handle(ev)...)
	}
	for i, e := range out {
		if err := e.Validate(); err != nil {
			t.Errorf("%s: event %d %+v: %v", name, i, e, err)
		}
		if e.SessionID != m.session {
			t.Errorf("%s: event %d in session %q", name, i, e.SessionID)
		}
	}
	return out
}

// shape is an event as one word: its kind, and its item's type and status,
// or its turn's status.
func shape(e agent.Event) string {
	switch {
	case e.Item != nil:
		return string(e.Kind) + ":" + string(e.Item.Type) + "/" + string(e.Item.Status)
	case e.Turn != nil && e.Turn.Status != "":
		return string(e.Kind) + ":" + string(e.Turn.Status)
	case e.Delta != nil:
		return string(e.Kind) + ":" + string(e.Delta.Field)
	case e.Resolution != nil:
		return string(e.Kind) + ":" + string(e.Resolution.Decision)
	}
	return string(e.Kind)
}

func shapes(evs []agent.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, shape(e))
	}
	return strings.Join(s, " ")
}

func wantShapes(t *testing.T, name string, got []agent.Event, want string) {
	t.Helper()
	if g := shapes(got); g != strings.Join(strings.Fields(want), " ") {
		t.Errorf("%s:\n got %s\nwant %s", name, g, strings.Join(strings.Fields(want), " "))
	}
}

// find returns the events matching kind and, for items, type.
func find(evs []agent.Event, k agent.Kind, typ agent.ItemType) []agent.Event {
	var out []agent.Event
	for _, e := range evs {
		if e.Kind == k && (typ == "" || (e.Item != nil && e.Item.Type == typ)) {
			out = append(out, e)
		}
	}
	return out
}

// Two turns: text streamed and completed, then a shell command (run
// without asking) and the answer; user messages from the echoed prompt,
// usage per step and per turn, every event but turn.started with its raw.
func TestMapTwoTurns(t *testing.T) {
	evs := replay(t, "serve-event-basic.sse")
	wantShapes(t, "basic", evs, `
		turn.started item.completed:user_message/completed
		item.started:message/in_progress item.delta:text item.delta:text item.delta:text item.delta:text item.completed:message/completed
		usage turn.completed:completed
		turn.started item.completed:user_message/completed
		item.started:command/in_progress item.delta:output item.completed:command/completed usage
		item.started:message/in_progress item.delta:text item.delta:text item.delta:text item.completed:message/completed usage
		turn.completed:completed`)
	users := find(evs, agent.KindItemCompleted, agent.ItemUserMessage)
	if users[0].Item.Text != "say hi" || users[1].Item.Text != "please USE_SHELL" {
		t.Errorf("user messages %q %q", users[0].Item.Text, users[1].Item.Text)
	}
	started := find(evs, agent.KindItemStarted, agent.ItemMessage)[0].Item
	var streamed strings.Builder
	for _, e := range evs[:8] {
		if e.Kind == agent.KindItemDelta {
			if e.Delta.ItemID != started.ID {
				t.Errorf("delta of %q, want %q", e.Delta.ItemID, started.ID)
			}
			streamed.WriteString(e.Delta.Text)
		}
	}
	done := find(evs, agent.KindItemCompleted, agent.ItemMessage)[0].Item
	if done.ID != started.ID || done.Text != streamed.String() || done.Text == "" || !strings.HasPrefix(done.MessageID, "msg_") {
		t.Errorf("message %+v, streamed %q", done, streamed.String())
	}
	cmd := find(evs, agent.KindItemCompleted, agent.ItemCommand)[0].Item
	if cmd.Command.Command != "echo hello" || cmd.Command.Output != "hello\n" || cmd.Command.ExitCode == nil || *cmd.Command.ExitCode != 0 {
		t.Errorf("command %+v", cmd.Command)
	}
	out := find(evs, agent.KindItemDelta, "")
	if d := out[4].Delta; d.Field != agent.FieldOutput || d.ItemID != cmd.ID || d.Text != "hello\n" {
		t.Errorf("output delta %+v", d)
	}
	ends := find(evs, agent.KindTurnCompleted, "")
	if ends[0].Turn.Text != done.Text || ends[0].Usage == nil || ends[0].Usage.InputTokens == 0 || ends[1].Turn.Text != "tool said: hello\n" {
		t.Errorf("turn ends %+v %+v / %+v", ends[0].Turn, ends[0].Usage, ends[1].Turn)
	}
	if u := ends[1].Usage; u.InputTokens != 40 || u.OutputTokens != 16 {
		t.Errorf("second turn's usage %+v, want the sum of its two steps", u)
	}
	if ends[0].TurnID == ends[1].TurnID || ends[0].TurnID == "" {
		t.Errorf("turn ids %q %q", ends[0].TurnID, ends[1].TurnID)
	}
	for _, e := range evs {
		if e.Kind != agent.KindTurnStarted && len(e.Raw) == 0 {
			t.Errorf("%s has no raw", shape(e))
		}
	}
}

// A permission asked and answered (by a client of the server): the
// approval names the command's item and offers once and always; the reply
// resolves it.
func TestMapPermission(t *testing.T) {
	evs := replay(t, "serve-event-permission.sse")
	wantShapes(t, "permission", evs, `
		turn.started item.completed:user_message/completed
		item.started:command/in_progress approval.requested approval.resolved:allow
		item.delta:output item.completed:command/completed usage
		item.started:message/in_progress item.delta:text item.delta:text item.delta:text item.completed:message/completed usage
		turn.completed:completed`)
	a := find(evs, agent.KindApprovalRequested, "")[0].Approval
	cmd := find(evs, agent.KindItemStarted, agent.ItemCommand)[0].Item
	if a.ID != "per_20186c58e001cHTnko7ydfJVp0" || a.Kind != agent.ApprovalTool || a.Tool != "bash" || a.Title != "bash: echo hello" ||
		a.ItemID != cmd.ID || string(a.Input) != `{"command":"echo hello"}` || a.Agent != "opencode" || a.TurnID == "" ||
		len(a.Scopes) != 2 || a.Scopes[0] != agent.ScopeOnce || a.Scopes[1] != agent.ScopeAlways {
		t.Errorf("approval %+v", a)
	}
	r := find(evs, agent.KindApprovalResolved, "")[0].Resolution
	if r.ApprovalID != a.ID || r.Decision != agent.Allow || r.Scope != agent.ScopeOnce || r.Cause != agent.CauseAgent {
		t.Errorf("resolution %+v", r)
	}
}

// A permission rejected: the command's item is declined, not failed.
func TestMapReject(t *testing.T) {
	evs := replay(t, "serve-event-reject.sse")
	cmd := find(evs, agent.KindItemCompleted, agent.ItemCommand)
	if len(cmd) != 1 || cmd[0].Item.Status != agent.ItemDeclined || !strings.Contains(cmd[0].Item.Command.Output, "rejected permission") {
		t.Fatalf("command %+v", cmd)
	}
	r := find(evs, agent.KindApprovalResolved, "")[0].Resolution
	if r.Decision != agent.Deny || r.Cause != agent.CauseAgent {
		t.Errorf("resolution %+v", r)
	}
}

// An abort: session.error MessageAbortedError, then OpenCode says idle
// before it closes the aborted message, and again after; the turn ends at
// the second, interrupted, with the text as it stood.
func TestMapAbort(t *testing.T) {
	evs := replay(t, "serve-event-abort.sse")
	wantShapes(t, "abort", evs, `
		turn.started item.completed:user_message/completed
		item.started:message/in_progress item.delta:text item.delta:text item.delta:text item.delta:text item.delta:text item.completed:message/completed
		turn.completed:interrupted`)
	if msg := find(evs, agent.KindItemCompleted, agent.ItemMessage)[0].Item; msg.Text != "tick tick tick tick tick " {
		t.Errorf("message %q", msg.Text)
	}
}

// Retries of a failing model API: each session.status retry is an error
// (api_error, retrying); a turn that ends while retrying failed with the
// API's error, or with turn_limit when the driver's time limit aborted it.
func TestMapRetry(t *testing.T) {
	evs := replay(t, "serve-event-retry.sse")
	wantShapes(t, "retry", evs, `turn.started item.completed:user_message/completed error error error turn.completed:failed`)
	for _, e := range find(evs, agent.KindError, "") {
		if e.Error.Code != agent.ErrorAPI || !e.Error.Retrying || !strings.Contains(e.Error.Message, "fake error 500") {
			t.Errorf("retry %+v", e.Error)
		}
	}
	if end := evs[len(evs)-1]; end.Error.Code != agent.ErrorAPI || end.Error.Retrying {
		t.Errorf("turn end %+v", end.Error)
	}
	m := newMapper("ses_x", fixedClock())
	m.startTurn()
	m.busy, m.limited = true, true
	end := m.endTurn(nil)
	if e := end[len(end)-1]; e.Turn.Status != agent.TurnFailed || e.Error.Code != agent.ErrorTurnLimit {
		t.Errorf("limited turn %+v %+v", e.Turn, e.Error)
	}
}

// A write asked for and allowed: one file_change item with the path,
// added; the step's patch part, which names the same file, adds none.
func TestMapWrite(t *testing.T) {
	evs := replay(t, "serve-event-write.sse")
	changes := find(evs, agent.KindItemCompleted, agent.ItemFileChange)
	if len(changes) != 1 || len(find(evs, agent.KindItemStarted, agent.ItemFileChange)) != 1 {
		t.Fatalf("file changes %s", shapes(evs))
	}
	w := changes[0].Item.Changes
	if len(w) != 1 || w[0].Path != "<workdir>/hello.txt" || w[0].Kind != agent.ChangeAdd {
		t.Errorf("write %+v", w)
	}
	if a := find(evs, agent.KindApprovalRequested, "")[0].Approval; a.Tool != "edit" || a.Title != "edit: <workdir>/hello.txt" || a.ItemID != changes[0].Item.ID {
		t.Errorf("approval %+v", a)
	}
}

// A step's patch part is a file_change of the files no file tool of its
// message reported: a shell command's writes, and of a step that also
// wrote with the write tool (here with a relative path) the other files.
func TestMapPatchOfOtherWrites(t *testing.T) {
	m := newMapper("ses_x", fixedClock())
	m.startTurn()
	part := func(id, msg string) oc.PartBase {
		return oc.PartBase{ID: id, SessionID: "ses_x", MessageID: msg}
	}
	m.partUpdated(&oc.ToolPart{PartBase: part("prt_1", "msg_1"), CallID: "call_1", Tool: "bash",
		State: oc.ToolState{Status: oc.ToolCompleted, Input: []byte(`{"command":"echo hi > a.txt"}`), Metadata: []byte(`{"exit":0}`)}}, nil)
	shell := m.partUpdated(&oc.PatchPart{PartBase: part("prt_2", "msg_1"), Files: []string{"/ws/a.txt"}}, nil)
	if len(shell) != 1 || shell[0].Item.Type != agent.ItemFileChange || len(shell[0].Item.Changes) != 1 || shell[0].Item.Changes[0].Path != "/ws/a.txt" {
		t.Errorf("a shell command's patch: %s %+v", shapes(shell), shell)
	}
	m.partUpdated(&oc.ToolPart{PartBase: part("prt_3", "msg_2"), CallID: "call_2", Tool: "write",
		State: oc.ToolState{Status: oc.ToolCompleted, Input: []byte(`{"filePath":"b.txt","content":"b"}`), Metadata: []byte(`{"exists":false}`)}}, nil)
	mixed := m.partUpdated(&oc.PatchPart{PartBase: part("prt_4", "msg_2"), Files: []string{"/ws/b.txt", "/ws/c.txt"}}, nil)
	if len(mixed) != 1 || len(mixed[0].Item.Changes) != 1 || mixed[0].Item.Changes[0].Path != "/ws/c.txt" {
		t.Errorf("a step that wrote b.txt with its tool and c.txt otherwise: %+v", mixed)
	}
	m.partUpdated(&oc.ToolPart{PartBase: part("prt_5", "msg_3"), CallID: "call_3", Tool: "edit",
		State: oc.ToolState{Status: oc.ToolCompleted, Input: []byte(`{"filePath":"/ws/d.txt"}`)}}, nil)
	if again := m.partUpdated(&oc.PatchPart{PartBase: part("prt_6", "msg_3"), Files: []string{"/ws/d.txt"}}, nil); len(again) != 0 {
		t.Errorf("an edit's own file came twice: %s", shapes(again))
	}
}

// todowrite is a plan.
func TestMapTodo(t *testing.T) {
	evs := replay(t, "serve-event-todo.sse")
	plan := find(evs, agent.KindItemCompleted, agent.ItemPlan)
	if len(plan) != 1 || len(plan[0].Item.Plan) != 2 || plan[0].Item.Plan[0] != (agent.PlanStep{Text: "write the plan", Status: "in_progress"}) {
		t.Fatalf("plan %+v", plan)
	}
}

// Reasoning streams and completes like text.
func TestMapReasoning(t *testing.T) {
	evs := replay(t, "serve-event-reason.sse")
	r := find(evs, agent.KindItemCompleted, agent.ItemReasoning)
	if len(r) != 1 || r[0].Item.Text == "" || len(find(evs, agent.KindItemStarted, agent.ItemReasoning)) != 1 {
		t.Fatalf("reasoning %s", shapes(evs))
	}
}

// What the driver itself reports: a dead server denies the pending
// approval, declines the call that waited for it (it never ran) and fails
// the turn; the host's close interrupts it instead; a late session.idle does not end the next
// turn; a command bash killed (no exit code) failed; data that is not an
// event is kept raw.
func TestMapDriverEvents(t *testing.T) {
	m := newMapper("ses_x", fixedClock())
	all := m.startTurn()
	tool := &oc.ToolPart{PartBase: oc.PartBase{ID: "prt_1", SessionID: "ses_x", MessageID: "msg_1", Type: oc.PartTool}, CallID: "call_1", Tool: "bash",
		State: oc.ToolState{Status: oc.ToolRunning, Input: []byte(`{"command":"sleep 9"}`)}}
	all = append(all, m.partUpdated(tool, []byte(`{}`))...)
	all = append(all, m.permissionAsked(&oc.PermissionRequest{ID: "per_1", SessionID: "ses_x", Permission: "bash", Patterns: []string{"sleep 9"},
		Tool: &oc.PermissionTool{MessageID: "msg_1", CallID: "call_1"}}, []byte(`{}`))...)
	all = append(all, m.abort(&agent.Error{Code: agent.ErrorAgentExit, Message: "gone"})...)
	all = append(all, m.ended("exited", &agent.Error{Code: agent.ErrorAgentExit, Message: "gone"}))
	wantShapes(t, "dead", all, `turn.started item.started:command/in_progress approval.requested approval.resolved:deny item.completed:command/declined turn.completed:failed session.ended`)
	closed := newMapper("ses_x", fixedClock())
	shut := append(closed.startTurn(), closed.partUpdated(tool, []byte(`{}`))...)
	shut = append(shut, closed.abort(nil)...)
	wantShapes(t, "closed", shut, `turn.started item.started:command/in_progress item.completed:command/failed turn.completed:interrupted`)
	for _, e := range all {
		if err := e.Validate(); err != nil {
			t.Errorf("%s: %v", shape(e), err)
		}
	}
	if r := all[3].Resolution; r.Cause != agent.CauseTurnEnded || r.ApprovalID != "per_1" {
		t.Errorf("resolution %+v", r)
	}

	late := m.startTurn()
	idle, _ := oc.NewEvent("evt_1", &oc.SessionIdle{SessionID: "ses_x"})
	late = append(late, m.handle(idle)...)
	if len(late) != 1 || !m.running() {
		t.Errorf("a session.idle before any work ended the turn: %s", shapes(late))
	}

	killed := &oc.ToolPart{PartBase: oc.PartBase{ID: "prt_2", SessionID: "ses_x", MessageID: "msg_2", Type: oc.PartTool}, CallID: "call_2", Tool: "bash",
		State: oc.ToolState{Status: oc.ToolCompleted, Input: []byte(`{"command":"sleep 9"}`), Output: "User aborted the command",
			Metadata: []byte(`{"output":"User aborted the command","exit":null}`)}}
	if got := m.partUpdated(killed, []byte(`{}`)); len(got) != 1 || got[0].Item.Status != agent.ItemFailed || got[0].Item.Command.Output != "User aborted the command" {
		t.Errorf("a killed command: %s", shapes(got))
	}

	bad := m.protocolError([]byte("{not json"), errors.New("cannot decode"))
	if err := bad.Validate(); err != nil || bad.Error.Code != agent.ErrorProtocol || string(bad.Raw) != `"{not json"` {
		t.Errorf("protocol error %+v: %v", bad, err)
	}
}

// Messages: the history's parts as completed items, the prompt included.
func TestHistoryItems(t *testing.T) {
	data, err := os.ReadFile("testdata/serve-session-messages.json")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []oc.MessageWithParts
	if err := json.Unmarshal(data, &msgs); err != nil {
		t.Fatal(err)
	}
	items := historyItems("ses_x", msgs)
	var got []string
	for _, it := range items {
		got = append(got, string(it.Type)+":"+it.Text)
		if it.Status == agent.ItemInProgress {
			t.Errorf("item %+v in progress", it)
		}
	}
	want := []string{"user_message:say hi", "message:hi there from fake openai", "user_message:please USE_SHELL", "command:", "message:tool said: hello\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("items %q, want %q", got, want)
	}
	if c := items[3].Command; c == nil || c.Command != "echo hello" || c.Output != "hello\n" {
		t.Errorf("command %+v", c)
	}
}

// Diff: the turns' summaries put together.
func TestSessionDiff(t *testing.T) {
	data, err := os.ReadFile("testdata/serve-session-messages-write.json")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []oc.MessageWithParts
	if err := json.Unmarshal(data, &msgs); err != nil {
		t.Fatal(err)
	}
	changes := sessionDiff(msgs)
	if len(changes) != 1 || changes[0].Path != "hello.txt" || changes[0].Kind != agent.ChangeAdd || !strings.Contains(changes[0].Diff, "+hello") {
		t.Fatalf("diff %+v", changes)
	}
	// A file added, then changed, then deleted in later turns.
	turn := func(status, patch string) oc.MessageWithParts {
		return oc.MessageWithParts{Info: oc.Message{Role: oc.RoleUser, Summary: &oc.MessageSummary{Diffs: []oc.FileDiff{{File: "a", Status: status, Patch: patch}}}}}
	}
	changes = sessionDiff([]oc.MessageWithParts{turn(oc.FileAdded, "1"), turn(oc.FileModified, "2")})
	if len(changes) != 1 || changes[0].Kind != agent.ChangeAdd || changes[0].Diff != "12" {
		t.Errorf("added then modified %+v", changes)
	}
	changes = sessionDiff([]oc.MessageWithParts{turn(oc.FileAdded, "1"), turn(oc.FileDeleted, "2")})
	if changes[0].Kind != agent.ChangeDelete {
		t.Errorf("added then deleted %+v", changes)
	}
}

// A resumed session's turns go on counting from the turns its history
// had: the two turns of the captured history make the next one t3, not a
// second t1.
func TestMapResumedTurnIDs(t *testing.T) {
	data, err := os.ReadFile("testdata/serve-session-messages.json")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []oc.MessageWithParts
	if err := json.Unmarshal(data, &msgs); err != nil {
		t.Fatal(err)
	}
	m := newMapper("ses_x", fixedClock())
	m.seedHistory(msgs)
	if evs := m.startTurn(); len(evs) != 1 || evs[0].TurnID != "ses_x/t3" {
		t.Fatalf("the first turn after a resume: %+v", evs)
	}
	m.closeTurn()
	if evs := m.startTurn(); evs[0].TurnID != "ses_x/t4" {
		t.Errorf("the second turn after a resume: %s", evs[0].TurnID)
	}
}

// The parts of a prompt besides its text, shaped as OpenCode 1.18 stores
// them: a file (its data: URL left out of the input) and an @agent mention
// are tool_call items; a subtask is the turn's user message; the
// synthetic text OpenCode adds for them is not the prompt. A file an
// assistant message carries is a file item too.
func TestMapPromptParts(t *testing.T) {
	m := newMapper("ses_x", fixedClock())
	m.roles["msg_u"], m.roles["msg_a"] = oc.RoleUser, oc.RoleAssistant
	base := func(id, msg, typ string) oc.PartBase {
		return oc.PartBase{ID: id, SessionID: "ses_x", MessageID: msg, Type: typ}
	}
	var evs []agent.Event
	for _, p := range []oc.Part{
		&oc.TextPart{PartBase: base("prt_1", "msg_u", oc.PartText), Text: "read @notes.txt"},
		&oc.TextPart{PartBase: base("prt_2", "msg_u", oc.PartText), Text: "Called the Read tool with the following input: {}", Synthetic: true},
		&oc.FilePart{PartBase: base("prt_3", "msg_u", oc.PartFile), Mime: "text/plain", Filename: "notes.txt", URL: "file:///ws/notes.txt",
			Source: &oc.FilePartSource{Type: "file", Path: "/ws/notes.txt"}},
		&oc.FilePart{PartBase: base("prt_4", "msg_u", oc.PartFile), Mime: "image/png", Filename: "shot.png", URL: "data:image/png;base64,iVBORw0KGgo="},
		&oc.AgentPart{PartBase: base("prt_5", "msg_u", oc.PartAgent), Name: "general"},
		&oc.SubtaskPart{PartBase: base("prt_6", "msg_u", oc.PartSubtask), Prompt: "check the tests", Description: "tests", Agent: "general"},
		&oc.FilePart{PartBase: base("prt_7", "msg_a", oc.PartFile), Mime: "image/png", URL: "data:image/png;base64,AAAA"},
	} {
		raw, _ := json.Marshal(p)
		evs = append(evs, m.partUpdated(p, raw)...)
	}
	wantShapes(t, "prompt parts", evs, `turn.started item.completed:user_message/completed item.completed:tool_call/completed
		item.completed:tool_call/completed item.completed:tool_call/completed item.completed:user_message/completed item.completed:tool_call/completed`)
	var got []string
	for _, e := range evs[1:] {
		if err := e.Validate(); err != nil {
			t.Errorf("%s: %v", shape(e), err)
		}
		if e.Item.Tool != nil {
			got = append(got, e.Item.Tool.Name+" "+string(e.Item.Tool.Input))
		} else {
			got = append(got, e.Item.Text)
		}
	}
	want := []string{"read @notes.txt", `file {"filename":"notes.txt","mime":"text/plain","url":"file:///ws/notes.txt","path":"/ws/notes.txt"}`,
		`file {"filename":"shot.png","mime":"image/png"}`, `agent {"name":"general"}`, "check the tests", `file {"mime":"image/png"}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("items\n got %q\nwant %q", got, want)
	}
	if again := m.partUpdated(&oc.AgentPart{PartBase: base("prt_5", "msg_u", oc.PartAgent), Name: "general"}, nil); len(again) != 0 {
		t.Errorf("a part seen again: %s", shapes(again))
	}
}
