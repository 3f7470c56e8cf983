package mast

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
)

// mappingRow is one row of docs/daemon.md's table of canonical → mast.*.
type mappingRow struct {
	canonical string
	types     []string
	fields    []string // path or path=value
}

func readMappingTable(t *testing.T) []mappingRow {
	t.Helper()
	data, err := os.ReadFile("../../docs/daemon.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []mappingRow
	in := false
	tick := regexp.MustCompile("`([^`]*)`")
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "| canonical event |") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		r := mappingRow{canonical: strings.TrimSpace(cells[0])}
		for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
			r.types = append(r.types, m[1])
		}
		// A field is `path` or `path`=`value`.
		for f := range strings.SplitSeq(cells[2], ",") {
			ms := tick.FindAllStringSubmatch(f, -1)
			switch len(ms) {
			case 1:
				r.fields = append(r.fields, ms[0][1])
			case 2:
				r.fields = append(r.fields, ms[0][1]+"="+ms[1][1])
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal("no mapping table in docs/daemon.md")
	}
	return rows
}

// mappingExamples are, per row, the events before (for the projector's
// state) and the event the row is about.
func mappingExamples() map[string][]agent.Event {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ev := func(kind agent.Kind, f func(*agent.Event)) agent.Event {
		e := agent.Event{Kind: kind, SessionID: "ses_1", TurnID: "t1", Time: t0}
		if f != nil {
			f(&e)
		}
		return e
	}
	item := func(kind agent.Kind, it agent.Item) agent.Event {
		return ev(kind, func(e *agent.Event) { e.Item = &it })
	}
	zero := 0
	user := agent.Item{ID: "u1", Type: agent.ItemUserMessage, Status: agent.ItemInProgress, Text: "hi"}
	userDone := user
	userDone.Status = agent.ItemDone
	msg := agent.Item{ID: "i1", Type: agent.ItemMessage, Status: agent.ItemInProgress}
	tool := agent.Item{ID: "tool1", Type: agent.ItemToolCall, Status: agent.ItemInProgress,
		Tool: &agent.ToolCall{Name: "Read", Input: json.RawMessage(`{"path":"a"}`)}}
	toolDone := tool
	toolDone.Status, toolDone.Tool = agent.ItemDone, &agent.ToolCall{Name: "Read", Input: json.RawMessage(`{"path":"a"}`), Output: "text of a"}
	cmd := agent.Item{ID: "c1", Type: agent.ItemCommand, Status: agent.ItemInProgress, Command: &agent.Command{Command: "ls"}}
	cmdDone := cmd
	cmdDone.Status, cmdDone.Command = agent.ItemDone, &agent.Command{Command: "ls", Output: "a\n", ExitCode: &zero}
	turn := ev(agent.KindTurnStarted, nil)
	orchestrators := ev(agent.KindTurnStarted, func(e *agent.Event) { e.Turn = &agent.TurnInfo{RequestID: orchestratorRequest + "r1"} })
	return map[string][]agent.Event{
		"`session.started`": {ev(agent.KindSessionStarted, func(e *agent.Event) {
			e.TurnID, e.Session = "", &agent.SessionInfo{Agent: "claude", NativeID: "n1"}
		})},
		"`turn.started`":              {turn},
		"`item.started` user_message": {turn, item(agent.KindItemStarted, user)},
		"`item.started` user_message of the orchestrator's prompt": {orchestrators, item(agent.KindItemStarted, user)},
		"`item.started` first of its message":                      {turn, item(agent.KindItemStarted, msg)},
		"`item.started` of an announced message":                   {turn, item(agent.KindItemStarted, msg), item(agent.KindItemStarted, agent.Item{ID: "r1", Type: agent.ItemReasoning, Status: agent.ItemInProgress})},
		"`item.delta`": {turn, item(agent.KindItemStarted, msg), ev(agent.KindItemDelta, func(e *agent.Event) {
			e.Delta = &agent.Delta{ItemID: "i1", Field: agent.FieldText, Text: "Hel"}
		})},
		"`item.completed` user_message": {turn, item(agent.KindItemStarted, user), item(agent.KindItemCompleted, userDone)},
		"`item.completed` user_message of the orchestrator's prompt": {orchestrators, item(agent.KindItemStarted, user),
			item(agent.KindItemCompleted, userDone)},
		"`item.completed` tool_call": {turn, item(agent.KindItemStarted, tool), item(agent.KindItemCompleted, toolDone)},
		"`item.completed` command":   {turn, item(agent.KindItemStarted, cmd), item(agent.KindItemCompleted, cmdDone)},
		"`approval.requested`": {turn, ev(agent.KindApprovalRequested, func(e *agent.Event) {
			e.Approval = &agent.Approval{ID: "a1", Kind: agent.ApprovalTool, Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`), Title: "Run ls", Created: t0}
		})},
		"`approval.resolved` allow": {turn, ev(agent.KindApprovalResolved, func(e *agent.Event) {
			e.Resolution = &agent.Resolution{ApprovalID: "a1", Decision: agent.Allow, Cause: agent.CauseClient, At: t0}
		})},
		"`approval.resolved` deny": {turn, ev(agent.KindApprovalResolved, func(e *agent.Event) {
			e.Resolution = &agent.Resolution{ApprovalID: "a1", Decision: agent.Deny, Reason: "not now", Cause: agent.CauseClient, At: t0}
		})},
		"`usage`": {turn, ev(agent.KindUsage, func(e *agent.Event) { e.Usage = &agent.Usage{InputTokens: 10, OutputTokens: 5} })},
		"`error`": {turn, item(agent.KindItemStarted, msg), ev(agent.KindError, func(e *agent.Event) {
			e.Seq, e.Error = 4, &agent.Error{Code: agent.ErrorAPI, Message: "overloaded", Retrying: true}
		})},
		"`turn.completed`": {turn, item(agent.KindItemStarted, msg), ev(agent.KindTurnCompleted, func(e *agent.Event) {
			e.Turn = &agent.TurnInfo{Status: agent.TurnCompleted, Text: "done"}
		})},
		"`turn.completed` after a prompt sent elsewhere": {turn, item(agent.KindItemCompleted, userDone), item(agent.KindItemStarted, msg),
			ev(agent.KindTurnCompleted, func(e *agent.Event) { e.Turn = &agent.TurnInfo{Status: agent.TurnCompleted} })},
		"`turn.completed` failed, nothing open": {turn, ev(agent.KindTurnCompleted, func(e *agent.Event) {
			e.Turn, e.Error = &agent.TurnInfo{Status: agent.TurnFailed}, &agent.Error{Code: agent.ErrorAPI, Message: "500"}
		})},
		"`native`": {turn, ev(agent.KindNative, func(e *agent.Event) { e.Raw = json.RawMessage(`{"type":"keep_alive"}`) })},
		"`session.ended`": {ev(agent.KindSessionEnded, func(e *agent.Event) {
			e.TurnID, e.Session = "", &agent.SessionInfo{Agent: "mock", Reason: "closed"}
		})},
	}
}

// Each row of the documented mapping, projected: exactly the listed
// types, in order, with every listed field.
func TestMappingTable(t *testing.T) {
	rows := readMappingTable(t)
	examples := mappingExamples()
	covered := map[agent.Kind]bool{}
	for _, row := range rows {
		t.Run(row.canonical, func(t *testing.T) {
			evs, ok := examples[row.canonical]
			if !ok {
				t.Fatalf("no example for the row %q", row.canonical)
			}
			p := newProjector("ses_1")
			for _, e := range evs[:len(evs)-1] {
				p.project(e, 1)
			}
			last := evs[len(evs)-1]
			covered[last.Kind] = true
			out := p.project(last, 2)
			var types []string
			var datas []map[string]any
			for _, e := range out {
				types = append(types, e.Type)
				if e.SessionID != "ses_1" || e.Data["sessionID"] != "ses_1" {
					t.Errorf("%s: sessionId %q, data.sessionID %v", e.Type, e.SessionID, e.Data["sessionID"])
				}
				if !slices.Contains(EventTypes(), e.Type) {
					t.Errorf("%s is not one of the seven mast.* types", e.Type)
				}
				raw, err := json.Marshal(e.Data)
				if err != nil {
					t.Fatal(err)
				}
				var d map[string]any
				_ = json.Unmarshal(raw, &d)
				datas = append(datas, d)
			}
			if !slices.Equal(types, row.types) {
				t.Fatalf("types %v, the table says %v", types, row.types)
			}
			for _, f := range row.fields {
				path, want, hasValue := strings.Cut(f, "=")
				found := false
				for _, d := range datas {
					if v, ok := lookup(d, path); ok && (!hasValue || fmt.Sprint(v) == want) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("no event has %s (data %v)", f, datas)
				}
			}
		})
	}
	for _, k := range agent.Kinds() {
		if !covered[k] {
			t.Errorf("the table has no row for %s", k)
		}
	}
}

func lookup(d map[string]any, path string) (any, bool) {
	var v any = d
	for key := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[key]; !ok {
			return nil, false
		}
	}
	return v, true
}
