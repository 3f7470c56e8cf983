package codex

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/internal/outbox"
	"github.com/tetherhq/tether/protocol/codexapp"
)

// The item types the captures do not show, from lines in the 0.169.0
// schema's shapes.
func TestMapItemTypes(t *testing.T) {
	for _, tc := range []struct {
		line string
		want func(agent.Item) bool
	}{
		{`{"type":"reasoning","id":"r1","summary":["think","more"],"content":[]}`,
			func(it agent.Item) bool { return it.Type == agent.ItemReasoning && it.Text == "think\n\nmore" }},
		{`{"type":"fileChange","id":"f1","status":"completed","changes":[{"path":"a.go","kind":{"type":"update","move_path":null},"diff":"@@ -1 +1 @@\n-a\n+b\n"}]}`,
			func(it agent.Item) bool {
				return it.Type == agent.ItemFileChange && len(it.Changes) == 1 && it.Changes[0].Kind == agent.ChangeUpdate && it.Changes[0].Diff != ""
			}},
		{`{"type":"mcpToolCall","id":"m1","server":"docs","tool":"search","status":"failed","arguments":{"q":"x"},"result":null,"error":{"message":"boom"}}`,
			func(it agent.Item) bool {
				return it.Type == agent.ItemToolCall && it.Tool.Server == "docs" && it.Tool.Name == "search" && it.Tool.IsError && it.Tool.Output == "boom" && it.Status == agent.ItemFailed
			}},
		{`{"type":"mcpToolCall","id":"m2","server":"docs","tool":"search","status":"completed","arguments":{},"result":{"content":[{"type":"text","text":"found"}]}}`,
			func(it agent.Item) bool { return it.Tool.Output == "found" && !it.Tool.IsError }},
		{`{"type":"webSearch","id":"w1","query":"go iter"}`,
			func(it agent.Item) bool {
				return it.Type == agent.ItemToolCall && it.Tool.Name == "web_search" && string(it.Tool.Input) == `{"query":"go iter"}`
			}},
		{`{"type":"plan","id":"p1","text":"1. read\n2. write"}`,
			func(it agent.Item) bool { return it.Type == agent.ItemPlan && it.Text == "1. read\n2. write" }},
		{`{"type":"imageView","id":"i1","path":"/x.png"}`,
			func(it agent.Item) bool {
				return it.Type == agent.ItemToolCall && it.Tool.Name == "imageView" && len(it.Tool.Input) > 0
			}},
	} {
		line := `{"method":"item/completed","params":{"threadId":"t","turnId":"u","completedAtMs":1,"item":` + tc.line + `}}`
		msg, err := codexapp.Decode([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		events := newMapper(time.Now).notification(msg.(*codexapp.Notification))
		if len(events) != 1 {
			t.Fatalf("%s: %d events", tc.line, len(events))
		}
		e := events[0]
		if err := e.Validate(); err != nil {
			t.Errorf("%s: %v", tc.line, err)
		}
		if !tc.want(*e.Item) {
			t.Errorf("%s mapped to %+v %+v", tc.line, e.Item, e.Item.Tool)
		}
	}
}

// turn/plan/updated → a completed plan item, a snapshot of the steps.
func TestMapPlanUpdate(t *testing.T) {
	line := `{"method":"turn/plan/updated","params":{"threadId":"t","turnId":"u","explanation":null,"plan":[{"step":"read","status":"completed"},{"step":"write","status":"inProgress"}]}}`
	msg, err := codexapp.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	events := newMapper(time.Now).notification(msg.(*codexapp.Notification))
	if len(events) != 1 || events[0].Validate() != nil {
		t.Fatalf("events %+v", events)
	}
	plan := events[0].Item.Plan
	if events[0].Item.Type != agent.ItemPlan || len(plan) != 2 || plan[1].Status != "in_progress" || plan[0].Text != "read" {
		t.Errorf("plan %+v", events[0].Item)
	}
}

// Lines the driver cannot read become error {protocol_error} with the line
// as Raw; the session reads on, and a server request it cannot read is
// still answered (the answer fails here: no process).
func TestMapMalformedLines(t *testing.T) {
	s := &session{log: slog.New(slog.DiscardHandler), now: time.Now, out: outbox.New(1 << 20), m: newMapper(time.Now), approvals: newApprovals()}
	for _, line := range []string{
		`not json`,
		`[1,2]`,
		`{"method":"item/started","params":{"item":5}}`,
		`{"method":"turn/completed","params":{"turn":{"id":""}}}`,
	} {
		s.handle([]byte(line))
	}
	s.handle([]byte(`{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u","items":[],"status":"inProgress"}}}`))
	q := s.out.Queued()
	if len(q) != 5 {
		t.Fatalf("%d events: %+v", len(q), q)
	}
	for i, e := range q[:4] {
		if err := e.Validate(); err != nil {
			t.Error(err)
		}
		if e.Kind != agent.KindError || e.Error.Code != agent.ErrorProtocol || len(e.Raw) == 0 {
			t.Errorf("line %d: %+v", i, e)
		}
	}
	if string(q[0].Raw) != `"not json"` {
		t.Errorf("a line that is not JSON is kept as a string: %s", q[0].Raw)
	}
	if q[4].Kind != agent.KindTurnStarted {
		t.Errorf("after the bad lines: %+v", q[4])
	}
}

// An approval Codex settles itself (serverRequest/resolved before any
// answer) resolves {agent}; one still pending when its turn completes
// resolves {turn_ended}; a later answer learns the first resolution.
func TestMapApprovalsSettledByCodex(t *testing.T) {
	s := &session{log: slog.New(slog.DiscardHandler), now: time.Now, out: outbox.New(1 << 20), m: newMapper(time.Now), approvals: newApprovals()}
	for _, line := range []string{
		`{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u","items":[],"status":"inProgress"}}}`,
		`{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"t","turnId":"u","itemId":"c1","command":"rm -rf x","startedAtMs":1}}`,
		`{"id":1,"method":"item/fileChange/requestApproval","params":{"threadId":"t","turnId":"u","itemId":"f1","startedAtMs":1}}`,
		`{"method":"serverRequest/resolved","params":{"threadId":"t","requestId":0}}`,
		`{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u","items":[],"status":"completed"}}}`,
	} {
		s.handle([]byte(line))
	}
	var res []agent.Resolution
	for _, e := range s.out.Queued() {
		if err := e.Validate(); err != nil {
			t.Error(err)
		}
		if e.Kind == agent.KindApprovalResolved {
			res = append(res, *e.Resolution)
		}
	}
	if len(res) != 2 || res[0].ApprovalID != "c1" || res[0].Cause != agent.CauseAgent || res[1].ApprovalID != "f1" || res[1].Cause != agent.CauseTurnEnded {
		t.Fatalf("resolutions %+v", res)
	}
	_, err := s.approvals.settle("c1", agent.Resolution{Decision: agent.Allow, Cause: agent.CauseClient})
	var already *agent.AlreadyResolvedError
	if !errors.As(err, &already) || already.First.Cause != agent.CauseAgent {
		t.Errorf("a late answer: %v", err)
	}
	if _, err := s.approvals.settle("nope", agent.Resolution{Decision: agent.Allow}); !errors.Is(err, agent.ErrUnknownApproval) {
		t.Errorf("an unknown approval: %v", err)
	}
}

// Each delta notification extends its field: text for messages, reasoning
// and plans, output for commands and file changes.
func TestMapDeltas(t *testing.T) {
	for method, field := range map[string]agent.Field{
		codexapp.MethodAgentMessageDelta:     agent.FieldText,
		codexapp.MethodReasoningSummaryDelta: agent.FieldText,
		codexapp.MethodReasoningTextDelta:    agent.FieldText,
		codexapp.MethodPlanDelta:             agent.FieldText,
		codexapp.MethodCommandOutputDelta:    agent.FieldOutput,
		codexapp.MethodFileChangeOutputDelta: agent.FieldOutput,
	} {
		line := `{"method":"` + method + `","params":{"threadId":"t","turnId":"u","itemId":"i","delta":"d","summaryIndex":0,"contentIndex":0}}`
		msg, err := codexapp.Decode([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		events := newMapper(time.Now).notification(msg.(*codexapp.Notification))
		if len(events) != 1 || events[0].Validate() != nil || *events[0].Delta != (agent.Delta{ItemID: "i", Field: field, Text: "d"}) {
			t.Errorf("%s: %+v", method, events)
		}
	}
}
