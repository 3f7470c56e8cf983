package claudecli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// replay feeds a recorded session (testdata/transcripts, captured from the
// real CLI) through the mapper as the driver would: prompts start turns,
// the CLI's lines map to events, can_use_tool requests open approvals and
// the host's answers resolve them. Every event must be valid.
func replay(t *testing.T, name string) []agent.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "transcripts", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	clock := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	m := newCanonicalMapper("s1", func() time.Time { clock = clock.Add(time.Millisecond); return clock })
	toolOf := map[string]string{} // approval id → tool_use id
	var events []agent.Event
	var lines []string // the CLI's, in order
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Dir string          `json:"dir"`
			Msg json.RawMessage `json:"msg"`
		}
		line := sc.Bytes()
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Msg == nil { // a print-mode capture: every line is the CLI's
			rec.Dir, rec.Msg = "<", append(json.RawMessage(nil), line...)
		}
		if rec.Dir == "<" {
			lines = append(lines, string(rec.Msg))
		}
		events = append(events, step(t, m, rec.Dir, rec.Msg, toolOf)...)
	}
	var raws []string
	for _, e := range events {
		if err := e.Validate(); err != nil {
			t.Fatalf("%v\n%+v", err, e)
		}
		if e.Raw != nil {
			raws = append(raws, string(e.Raw))
		}
	}
	// Every line of the CLI is the raw of exactly one event, in order.
	if !slices.Equal(raws, lines) {
		t.Fatalf("the events carry %d raw lines, the CLI wrote %d:\n%s", len(raws), len(lines), strings.Join(raws, "\n"))
	}
	return events
}

func step(t *testing.T, m *canonicalMapper, dir string, raw json.RawMessage, toolOf map[string]string) []agent.Event {
	var head struct {
		Type     string          `json:"type"`
		Message  json.RawMessage `json:"message"`
		Response struct {
			RequestID string `json:"request_id"`
			Response  struct {
				Behavior string `json:"behavior"`
				Message  string `json:"message"`
			} `json:"response"`
		} `json:"response"`
	}
	_ = json.Unmarshal(raw, &head)
	switch {
	case dir == ">" && head.Type == "user":
		var msg cc.UserMessageParam
		_ = json.Unmarshal(head.Message, &msg)
		return m.startTurn(contentText(msg.Content), "")
	case dir == ">" && head.Type == "control_response":
		tool, ok := toolOf[head.Response.RequestID]
		if !ok {
			return nil
		}
		d := agent.Allow
		if head.Response.Response.Behavior == "deny" {
			d = agent.Deny
		}
		return []agent.Event{m.approvalResolved(tool, "", agent.Resolution{ApprovalID: head.Response.RequestID,
			Decision: d, Reason: head.Response.Response.Message, Cause: agent.CauseClient})}
	case dir != "<":
		return nil
	}
	msg, err := cc.Parse(raw)
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if req, ok := msg.(*cc.ControlRequest); ok && req.Subtype() == cc.SubtypeCanUseTool {
		var use cc.CanUseToolRequest
		if err := req.Decode(&use); err != nil {
			t.Fatal(err)
		}
		toolOf[req.RequestID] = use.ToolUseID
		return []agent.Event{m.approvalRequested(req.RequestID, &use, msg.Raw())}
	}
	return m.line(msg)
}

func kinds(events []agent.Event) []agent.Kind {
	var out []agent.Kind
	for _, e := range events {
		out = append(out, e.Kind)
	}
	return out
}

func completed(events []agent.Event, typ agent.ItemType) []*agent.Item {
	var out []*agent.Item
	for _, e := range events {
		if e.Kind == agent.KindItemCompleted && e.Item.Type == typ {
			out = append(out, e.Item)
		}
	}
	return out
}

func turnEnds(events []agent.Event) []*agent.Event {
	var out []*agent.Event
	for i := range events {
		if events[i].Kind == agent.KindTurnCompleted {
			out = append(out, &events[i])
		}
	}
	return out
}

// system/init → session.started, once; a prompt → turn.started and the
// user's message; text blocks → message items; result → usage and
// turn.completed. Two turns, one session.
func TestCanonicalTwoTurns(t *testing.T) {
	events := replay(t, "b-sdk-basic-two-turns.transcript.jsonl")
	if n := slices.Index(kinds(events), agent.KindSessionStarted); n < 0 || events[n].Session.Agent != "claude" || events[n].Session.NativeID == "" {
		t.Fatalf("no session.started with the native id: %v", kinds(events))
	}
	count := func(k agent.Kind) int {
		n := 0
		for _, e := range events {
			if e.Kind == k {
				n++
			}
		}
		return n
	}
	if count(agent.KindSessionStarted) != 1 || count(agent.KindTurnStarted) != 2 || count(agent.KindUsage) != 2 {
		t.Fatalf("kinds %v", kinds(events))
	}
	ends := turnEnds(events)
	if len(ends) != 2 || ends[0].Turn.Status != agent.TurnCompleted || ends[0].TurnID == ends[1].TurnID {
		t.Fatalf("turn ends %+v", ends)
	}
	msgs := completed(events, agent.ItemMessage)
	if len(msgs) != 2 || msgs[0].Text == "" || msgs[0].Text != ends[0].Turn.Text {
		t.Fatalf("messages %+v, first turn's text %q", msgs, ends[0].Turn.Text)
	}
	prompts := completed(events, agent.ItemUserMessage)
	if len(prompts) != 2 || prompts[0].Text == "" {
		t.Fatalf("prompts %+v", prompts)
	}
	for _, e := range events {
		if e.Raw != nil && (e.Kind == agent.KindTurnCompleted || e.Kind == agent.KindSessionStarted) {
			t.Errorf("%s carries a raw line: a client of the agent's lines sees it on another event", e.Kind)
		}
		// The assistant lines' parser validated them whole: the core
		// need not check them again. Other lines are the core's to check.
		if checked := e.Kind == agent.KindItemCompleted && e.Item.Type == agent.ItemMessage; e.RawChecked != checked {
			t.Errorf("a %s event's raw line checked %v, want %v", e.Kind, e.RawChecked, checked)
		}
	}
}

// Partial messages: stream events start items and stream deltas; the
// whole message completes them with the same id and the deltas' text.
// Bash is a command item whose result is its output.
func TestCanonicalStreamedBash(t *testing.T) {
	events := replay(t, "b-sdk-tool-bash-partial-messages.transcript.jsonl")
	text := map[string]string{}
	started := map[string]agent.ItemType{}
	for _, e := range events {
		switch e.Kind {
		case agent.KindItemStarted:
			started[e.Item.ID] = e.Item.Type
		case agent.KindItemDelta:
			if _, ok := started[e.Delta.ItemID]; !ok {
				t.Fatalf("delta for an item never started: %+v", e.Delta)
			}
			text[e.Delta.ItemID] += e.Delta.Text
		}
	}
	msgs := completed(events, agent.ItemMessage)
	if len(msgs) != 2 {
		t.Fatalf("messages %+v", msgs)
	}
	for _, it := range msgs {
		if started[it.ID] != agent.ItemMessage || text[it.ID] != it.Text {
			t.Errorf("item %s: streamed %q, completed %q", it.ID, text[it.ID], it.Text)
		}
	}
	cmds := completed(events, agent.ItemCommand)
	if len(cmds) != 1 || cmds[0].Status != agent.ItemDone || cmds[0].Command.Command == "" ||
		!strings.Contains(cmds[0].Command.Output, "hello") || cmds[0].Command.ExitCode == nil || *cmds[0].Command.ExitCode != 0 {
		t.Fatalf("command %+v", cmds)
	}
	var input map[string]string
	if err := json.Unmarshal([]byte(text[cmds[0].ID]), &input); err != nil || input["command"] != cmds[0].Command.Command {
		t.Fatalf("streamed input %q does not give the command %q", text[cmds[0].ID], cmds[0].Command.Command)
	}
}

// can_use_tool → approval.requested for the tool item; the host's deny →
// approval.resolved, and the Write completes declined (it did not run).
func TestCanonicalApprovalDenied(t *testing.T) {
	for name, want := range map[string]agent.ItemStatus{
		"b-sdk-tool-write-can_use_tool-deny.transcript.jsonl":  agent.ItemDeclined,
		"b-sdk-tool-write-can_use_tool-allow.transcript.jsonl": agent.ItemDone,
	} {
		events := replay(t, name)
		var asked *agent.Approval
		var resolved *agent.Resolution
		for _, e := range events {
			if e.Approval != nil {
				asked = e.Approval
			}
			if e.Resolution != nil {
				resolved = e.Resolution
			}
		}
		changes := completed(events, agent.ItemFileChange)
		if asked == nil || resolved == nil || len(changes) != 1 {
			t.Fatalf("%s: approval %+v, resolution %+v, changes %+v", name, asked, resolved, changes)
		}
		if asked.Tool != "Write" || asked.ItemID != changes[0].ID || resolved.ApprovalID != asked.ID ||
			!strings.HasSuffix(changes[0].Changes[0].Path, "hello.txt") || !strings.HasPrefix(asked.Title, "Write: ") {
			t.Errorf("%s: approval %+v, resolution %+v, change %+v", name, asked, resolved, changes[0])
		}
		if changes[0].Status != want {
			t.Errorf("%s: file change %s, want %s", name, changes[0].Status, want)
		}
	}
}

// An interrupted turn completes as interrupted, not failed; the session
// takes the next turn.
func TestCanonicalInterrupt(t *testing.T) {
	ends := turnEnds(replay(t, "b-sdk-interrupt.transcript.jsonl"))
	if len(ends) != 2 || ends[0].Turn.Status != agent.TurnInterrupted || ends[1].Turn.Status != agent.TurnCompleted {
		t.Fatalf("turn ends %+v %+v", ends[0].Turn, ends[len(ends)-1].Turn)
	}
}

// An API failure: the CLI's stand-in assistant message is no message
// item; the turn fails with an api_error and its status. A retry is an
// error event that says the CLI goes on.
func TestCanonicalAPIErrors(t *testing.T) {
	events := replay(t, "d-print-api-error-400.stdout.jsonl")
	ends := turnEnds(events)
	if len(ends) != 1 || ends[0].Turn.Status != agent.TurnFailed || ends[0].Error.Code != agent.ErrorAPI || ends[0].Error.Status != 400 {
		t.Fatalf("turn end %+v", ends)
	}
	if msgs := completed(events, agent.ItemMessage); len(msgs) != 0 {
		t.Errorf("the API error became a message: %+v", msgs)
	}
	events = replay(t, "d-print-api-error-500-retry.stdout.jsonl")
	var retry *agent.Error
	for _, e := range events {
		if e.Kind == agent.KindError {
			retry = e.Error
		}
	}
	if retry == nil || !retry.Retrying || retry.Status != 500 {
		t.Fatalf("retry %+v in %v", retry, kinds(events))
	}
}

// Each kind of Claude tool becomes the item type clients show it as.
func TestClassifyTool(t *testing.T) {
	cases := []struct {
		name, input string
		check       func(*agent.Item) bool
	}{
		{"Bash", `{"command":"ls -la"}`, func(it *agent.Item) bool { return it.Type == agent.ItemCommand && it.Command.Command == "ls -la" }},
		{"Edit", `{"file_path":"/w/a.go","old_string":"a","new_string":"b"}`, func(it *agent.Item) bool {
			return it.Type == agent.ItemFileChange && it.Changes[0] == agent.FileChange{Path: "/w/a.go", Kind: agent.ChangeUpdate}
		}},
		{"TodoWrite", `{"todos":[{"content":"write tests","status":"in_progress","activeForm":"Writing tests"}]}`, func(it *agent.Item) bool {
			return it.Type == agent.ItemPlan && len(it.Plan) == 1 && it.Plan[0] == agent.PlanStep{Text: "write tests", Status: "in_progress"}
		}},
		{"AskUserQuestion", `{"questions":[{"question":"Which?","header":"h","multiSelect":true,"options":[{"label":"A","description":"a"},{"label":"B","description":"b"}]}]}`,
			func(it *agent.Item) bool {
				q := it.Question
				return it.Type == agent.ItemQuestion && q.Prompt == "Which?" && q.MultiSelect && len(q.Options) == 2 && q.Options[1].Label == "B"
			}},
		{"mcp__calc__add", `{"a":1}`, func(it *agent.Item) bool {
			return it.Type == agent.ItemToolCall && it.Tool.Name == "mcp__calc__add" && it.Tool.Server == "calc" && string(it.Tool.Input) == `{"a":1}`
		}},
		{"Read", `not json`, func(it *agent.Item) bool { return it.Type == agent.ItemToolCall && it.Tool.Name == "Read" }},
	}
	for _, tc := range cases {
		item := &agent.Item{ID: "x", Status: agent.ItemInProgress}
		classifyTool(item, tc.name, json.RawMessage(tc.input))
		if !tc.check(item) {
			t.Errorf("%s: %+v", tc.name, item)
		}
		if reason := (&agent.Event{Kind: agent.KindItemStarted, Item: item}).Validate(); reason != nil {
			t.Errorf("%s: %v", tc.name, reason)
		}
	}
}
