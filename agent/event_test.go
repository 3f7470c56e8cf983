package agent_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
)

var t0 = time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC)

func exitCode(n int) *int { return &n }

// oneOfEach is a valid event of every kind and every item type.
func oneOfEach() []agent.Event {
	ev := func(k agent.Kind) agent.Event { return agent.Event{Kind: k, SessionID: "s1", TurnID: "t1", Time: t0} }
	with := func(e agent.Event, set func(*agent.Event)) agent.Event { set(&e); return e }
	item := func(typ agent.ItemType, status agent.ItemStatus, set func(*agent.Item)) *agent.Item {
		it := &agent.Item{ID: "i-" + string(typ), Type: typ, Status: status, MessageID: "m1"}
		if set != nil {
			set(it)
		}
		return it
	}
	events := []agent.Event{
		with(ev(agent.KindSessionStarted), func(e *agent.Event) {
			e.TurnID = ""
			e.Session = &agent.SessionInfo{Agent: "mock", NativeID: "n1", Model: "m", Cwd: "/w"}
		}),
		ev(agent.KindTurnStarted),
		with(ev(agent.KindTurnStarted), func(e *agent.Event) { e.Turn = &agent.TurnInfo{RequestID: "q1"} }),
		with(ev(agent.KindNative), func(e *agent.Event) { e.Raw = json.RawMessage(`{"type":"keep_alive"}`) }),
		with(ev(agent.KindItemDelta), func(e *agent.Event) {
			e.Delta = &agent.Delta{ItemID: "i-message", Field: agent.FieldText, Text: "he"}
		}),
		with(ev(agent.KindApprovalRequested), func(e *agent.Event) {
			e.Approval = &agent.Approval{ID: "a1", Kind: agent.ApprovalTool, Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`),
				Title: "Bash: ls", Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeSession}, Created: t0,
				Expires: t0.Add(time.Minute), Default: agent.Deny}
		}),
		with(ev(agent.KindApprovalResolved), func(e *agent.Event) {
			e.Resolution = &agent.Resolution{ApprovalID: "a1", Decision: agent.Allow, Scope: agent.ScopeOnce, By: "ops", Cause: agent.CauseClient, At: t0}
		}),
		with(ev(agent.KindUsage), func(e *agent.Event) { e.Usage = &agent.Usage{InputTokens: 3, OutputTokens: 4, CostUSD: 0.01} }),
		with(ev(agent.KindError), func(e *agent.Event) {
			e.Error = &agent.Error{Code: agent.ErrorAPI, Message: "overloaded", Status: 529, Retrying: true}
		}),
		with(ev(agent.KindTurnCompleted), func(e *agent.Event) {
			e.Turn = &agent.TurnInfo{Status: agent.TurnFailed, DurationMS: 12}
			e.Error = &agent.Error{Code: agent.ErrorAPI, Message: "bad request", Status: 400}
			e.Usage = &agent.Usage{InputTokens: 1}
		}),
		with(ev(agent.KindSessionEnded), func(e *agent.Event) { e.Session = &agent.SessionInfo{Agent: "mock", Reason: "closed"} }),
	}
	typed := map[agent.ItemType]func(*agent.Item){
		agent.ItemToolCall: func(it *agent.Item) {
			it.Tool = &agent.ToolCall{Name: "Read", Input: json.RawMessage(`{}`), Output: "x"}
		},
		agent.ItemCommand: func(it *agent.Item) { it.Command = &agent.Command{Command: "ls", Output: "a\n", ExitCode: exitCode(0)} },
		agent.ItemFileChange: func(it *agent.Item) {
			it.Changes = []agent.FileChange{{Path: "a.go", Kind: agent.ChangeAdd, Diff: "+x"}}
		},
		agent.ItemPlan: func(it *agent.Item) { it.Plan = []agent.PlanStep{{Text: "do", Status: "pending"}} },
		agent.ItemQuestion: func(it *agent.Item) {
			it.Question = &agent.Question{Prompt: "which?", Options: []agent.Option{{ID: "a", Label: "A"}}}
		},
	}
	for _, typ := range agent.ItemTypes() {
		events = append(events,
			with(ev(agent.KindItemStarted), func(e *agent.Event) { e.Item = item(typ, agent.ItemInProgress, typed[typ]) }),
			with(ev(agent.KindItemCompleted), func(e *agent.Event) { e.Item = item(typ, agent.ItemDone, typed[typ]) }))
	}
	return events
}

// Every kind and item type has a valid form, and it survives JSON.
func TestEveryKindRoundTrips(t *testing.T) {
	seen := map[agent.Kind]bool{}
	for _, e := range oneOfEach() {
		seen[e.Kind] = true
		if err := e.Validate(); err != nil {
			t.Fatalf("%s: %v", e.Kind, err)
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := agent.ParseEvent(b)
		if err != nil {
			t.Fatalf("%s: %v\n%s", e.Kind, err, b)
		}
		if !reflect.DeepEqual(back, e) {
			t.Fatalf("round trip of %s\n got %+v\nwant %+v", e.Kind, back, e)
		}
	}
	for _, k := range agent.Kinds() {
		if !seen[k] {
			t.Errorf("no example of %s", k)
		}
	}
}

// Events that break the model are refused with the reason.
func TestInvalidEvents(t *testing.T) {
	cases := map[string]string{
		"unknown kind":             `{"kind":"nope","time":"2026-11-25T05:00:00Z"}`,
		"native without raw":       `{"kind":"native","time":"2026-11-25T05:00:00Z"}`,
		"native with a payload":    `{"kind":"native","usage":{},"raw":{},"time":"2026-11-25T05:00:00Z"}`,
		"item event without item":  `{"kind":"item.started","time":"2026-11-25T05:00:00Z"}`,
		"foreign payload":          `{"kind":"usage","usage":{},"item":{"id":"x","type":"message","status":"completed"},"time":"2026-11-25T05:00:00Z"}`,
		"completed in progress":    `{"kind":"item.completed","item":{"id":"x","type":"message","status":"in_progress"},"time":"2026-11-25T05:00:00Z"}`,
		"started but done":         `{"kind":"item.started","item":{"id":"x","type":"message","status":"completed"},"time":"2026-11-25T05:00:00Z"}`,
		"unknown item type":        `{"kind":"item.started","item":{"id":"x","type":"dance","status":"in_progress"},"time":"2026-11-25T05:00:00Z"}`,
		"command without command":  `{"kind":"item.started","item":{"id":"x","type":"command","status":"in_progress"},"time":"2026-11-25T05:00:00Z"}`,
		"message with a tool":      `{"kind":"item.started","item":{"id":"x","type":"message","status":"in_progress","tool":{"name":"Bash"}},"time":"2026-11-25T05:00:00Z"}`,
		"failed turn without why":  `{"kind":"turn.completed","turn_id":"t","turn":{"status":"failed"},"time":"2026-11-25T05:00:00Z"}`,
		"turn without id":          `{"kind":"turn.started","time":"2026-11-25T05:00:00Z"}`,
		"resolution with no cause": `{"kind":"approval.resolved","resolution":{"approval_id":"a","decision":"allow"},"time":"2026-11-25T05:00:00Z"}`,
		"maybe is no decision":     `{"kind":"approval.resolved","resolution":{"approval_id":"a","decision":"maybe","cause":"client"},"time":"2026-11-25T05:00:00Z"}`,
		"question without options": `{"kind":"approval.requested","approval":{"id":"a","kind":"question","title":"?"},"time":"2026-11-25T05:00:00Z"}`,
		"delta of unknown field":   `{"kind":"item.delta","delta":{"item_id":"x","field":"color","text":"red"},"time":"2026-11-25T05:00:00Z"}`,
		"not json":                 `{"kind":`,
		"not an object":            `[1]`,
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := agent.ParseEvent([]byte(raw))
			if !errors.Is(err, agent.ErrInvalidEvent) {
				t.Fatalf("ParseEvent = %v, want ErrInvalidEvent", err)
			}
		})
	}
}

// A second resolution learns what the first decided and who decided it.
func TestAlreadyResolvedSaysWhoWon(t *testing.T) {
	err := error(&agent.AlreadyResolvedError{First: agent.Resolution{ApprovalID: "a1", Decision: agent.Deny, By: "phone", Cause: agent.CauseClient}})
	var ar *agent.AlreadyResolvedError
	if !errors.Is(err, agent.ErrAlreadyResolved) || !errors.As(err, &ar) || ar.First.By != "phone" {
		t.Fatalf("err = %v", err)
	}
	if got, want := err.Error(), "agent: approval a1 was already resolved (deny, by phone)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if !errors.Is(&agent.UnsupportedError{Agent: "claude", Capability: "steer"}, agent.ErrUnsupported) {
		t.Error("UnsupportedError does not match ErrUnsupported")
	}
}

func FuzzParseEvent(f *testing.F) {
	for _, e := range oneOfEach() {
		b, _ := json.Marshal(e)
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"item.delta","delta":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := agent.ParseEvent(data)
		if err != nil {
			if !errors.Is(err, agent.ErrInvalidEvent) {
				t.Fatalf("error %v does not match ErrInvalidEvent", err)
			}
			return
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agent.ParseEvent(b); err != nil {
			t.Fatalf("a valid event re-encoded is invalid: %v\n%s", err, b)
		}
	})
}

// AppendJSON writes what json.Marshal writes, for every kind, with and
// without a raw payload; a raw payload with spaces is kept as it came.
func TestAppendJSONIsMarshal(t *testing.T) {
	for _, e := range oneOfEach() {
		for _, raw := range []string{"", `{"type":"x","n":[1,2]}`} {
			e.Raw = json.RawMessage(raw)
			want, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.AppendJSON([]byte("prefix"))
			if err != nil || string(got) != "prefix"+string(want) {
				t.Fatalf("%s:\n got %s\nwant prefix%s", e.Kind, got, want)
			}
		}
	}
	e := oneOfEach()[0]
	e.Raw = json.RawMessage(`{"a": 1}`)
	got, _ := e.AppendJSON(nil)
	var back agent.Event
	if err := json.Unmarshal(got, &back); err != nil || string(back.Raw) != `{"a": 1}` {
		t.Fatalf("%s → %s %v", got, back.Raw, err)
	}
	e.Raw = json.RawMessage(`{"a":`)
	if err := e.Validate(); err == nil {
		t.Fatal("a raw payload that is not JSON passed Validate")
	}
}

// The events written without reflection are json.Marshal's to the byte,
// whatever their strings hold (escapes, HTML, invalid UTF-8, U+2028) and
// whatever their times.
func FuzzAppendJSONText(f *testing.F) {
	f.Add(int64(3), "s1", "t1", "hello <b>&</b> \"q\" \\ \n\t\x01 \u2028 é", "m1", true, int64(1764046800123456789))
	f.Add(int64(0), "", "", "\xff\xfe bad utf-8 \u2029", "", false, int64(0))
	f.Add(int64(4), "s1", "t1", "delta <&>", "m1", true, int64(1764046800123456789))
	f.Fuzz(func(t *testing.T, seq int64, session, turn, text, messageID string, delta bool, nanos int64) {
		zone := time.FixedZone("z", int(seq%(24*60))*60)
		e := agent.Event{Seq: seq, Kind: agent.KindItemCompleted, SessionID: session, TurnID: turn, Time: time.Unix(0, nanos).In(zone),
			Item: &agent.Item{ID: text, Type: agent.ItemMessage, Status: agent.ItemDone, MessageID: messageID, ParentID: turn, Text: text}}
		switch {
		case delta && seq%2 == 0:
			e.Kind, e.Item = agent.KindItemDelta, nil
			e.Delta = &agent.Delta{ItemID: messageID, Field: agent.FieldText, Text: text}
		case delta: // no payload at all, as a native event has
			e.Kind, e.Item = agent.KindNative, nil
		}
		want, err := json.Marshal(e)
		if err != nil {
			t.Skip(err)
		}
		got, err := e.AppendJSON(nil)
		if err != nil || string(got) != string(want) {
			t.Fatalf("AppendJSON\n got %s\nwant %s (%v)", got, want, err)
		}
	})
}

// A question's options are numbered from 0; ids and labels map both ways,
// in the order asked, passing over what names no option.
func TestQuestionOptions(t *testing.T) {
	q := agent.NewQuestion("Which?", true, []string{"red", "green", "blue"})
	if len(q.Options) != 3 || q.Options[2] != (agent.Option{ID: "2", Label: "blue"}) || !q.MultiSelect {
		t.Fatalf("%+v", q)
	}
	if got := q.Labels([]string{"2", "9", "0"}); !slices.Equal(got, []string{"blue", "red"}) {
		t.Fatalf("labels %q", got)
	}
	if got := q.Labels(nil); got == nil || len(got) != 0 {
		t.Fatalf("no ids: %#v, want an empty list", got)
	}
	if got := q.IDs([]string{"green", "pink", "red"}); !slices.Equal(got, []string{"1", "0"}) {
		t.Fatalf("ids %q", got)
	}
}

// An event's logged bytes, numbered, are the document AppendJSON writes
// of it with its seq: a reader writes them without encoding the event.
func TestAppendLoggedIsAppendJSON(t *testing.T) {
	for _, e := range oneOfEach() {
		e.Seq = 0
		logged, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		e.Seq, e.Logged = 42, logged
		want, _ := e.AppendJSON(nil)
		got, err := e.AppendLogged(nil)
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s: AppendLogged\n got %s\nwant %s", e.Kind, got, want)
		}
	}
}

// A logged event decodes to the event that was logged, as ParseEvent
// decodes it.
func TestDecodeLoggedIsParseEvent(t *testing.T) {
	for _, e := range oneOfEach() {
		e.Raw = json.RawMessage(`{"type":"x","n":[1,2,{"a":"\u00e9\n"}]}`)
		data, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := agent.ParseEvent(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := agent.DecodeLogged(data)
		if err != nil {
			t.Fatal(err)
		}
		got.Logged, got.RawChecked = nil, false
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: DecodeLogged\n got %+v\nwant %+v", e.Kind, got, want)
		}
	}
}
