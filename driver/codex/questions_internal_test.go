package codex

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/protocol/codexapp"
)

// item/tool/requestUserInput (the model's request_user_input, as the real
// app-server 0.169.0 sent it) → approval.requested of kind question: the
// first question's text, its options' labels numbered from 0, no scopes;
// the client's answer (the chosen label) → approval.resolved with the
// option's id.
func TestMapRequestUserInput(t *testing.T) {
	events := replay(t, "app-server-request-user-input.transcript.jsonl")
	reqs := find(events, agent.KindApprovalRequested, "")
	if len(reqs) != 1 {
		t.Fatalf("approval.requested %+v", reqs)
	}
	a := reqs[0].Approval
	if a.ID != "call_fake_1" || a.Kind != agent.ApprovalQuestion || a.Tool != "request_user_input" || a.Title != "Which database?" ||
		a.TurnID != "01a21f20-1bd0-7671-bda6-48640cbeb69a" || len(a.Scopes) != 0 || method(reqs[0]) != codexapp.MethodToolRequestUserInput {
		t.Errorf("approval %+v", a)
	}
	if q := a.Question; q == nil || q.MultiSelect || !slices.Equal(q.Labels([]string{"0", "1"}), []string{"Postgres", "SQLite"}) {
		t.Errorf("question %+v", a.Question)
	}
	res := find(events, agent.KindApprovalResolved, "")
	if len(res) != 1 || res[0].Resolution.Decision != agent.Allow || !slices.Equal(res[0].Resolution.Answers, []string{"1"}) {
		t.Errorf("approval.resolved %+v", res)
	}
}

// A question's answers: an allow answers the first question with the
// chosen labels and the others with none; a deny answers none; an answer
// of no option is a *BadAnswerError and leaves the question pending.
func TestUserInputAnswers(t *testing.T) {
	p := &codexapp.ToolRequestUserInputParams{ItemID: "c", Questions: []codexapp.UserInputQuestion{
		{ID: "db", Header: "Database", Options: []codexapp.UserInputOption{{Label: "Postgres"}, {Label: "SQLite"}}},
		{ID: "name", Question: "Its name?"},
	}}
	q := userInputQuestion(p)
	if q.Prompt != "Database" || len(q.Options) != 2 {
		t.Fatalf("question %+v", q)
	}
	got, _ := json.Marshal(userInputAnswer(p, q, agent.Resolution{Decision: agent.Allow, Answers: []string{"0"}}))
	if string(got) != `{"answers":{"db":{"answers":["Postgres"]},"name":{"answers":[]}}}` {
		t.Errorf("allow: %s", got)
	}
	got, _ = json.Marshal(userInputAnswer(p, q, agent.Resolution{Decision: agent.Deny}))
	if string(got) != `{"answers":{}}` {
		t.Errorf("deny: %s", got)
	}
	a := newApprovals()
	a.byID["c"] = &approval{id: "c", question: q, userInput: p}
	var bad *agent.BadAnswerError
	if _, err := a.settle("c", agent.Resolution{Decision: agent.Allow, Answers: []string{"0", "1"}, Cause: agent.CauseClient}); !errors.As(err, &bad) {
		t.Errorf("two answers to a one-answer question: %v", err)
	}
	if _, err := a.settle("c", agent.Resolution{Decision: agent.Allow, Answers: []string{"1"}, Cause: agent.CauseClient}); err != nil {
		t.Errorf("then a good answer: %v", err)
	}
}

// mcpServer/elicitation/request → a question: a form of one field with
// choices asks among them and accepts with the chosen value(s); another
// form, or a page to visit, asks for an allow, accepted with an empty form
// (or no content for a page); a deny declines.
func TestElicitationQuestions(t *testing.T) {
	for _, c := range []struct {
		name, mode, schema, url string
		answers                 []string
		labels                  []string
		multi                   bool
		want                    string
	}{
		{name: "enum", mode: "form", schema: `{"type":"object","properties":{"db":{"type":"string","enum":["pg","sqlite"]}}}`,
			answers: []string{"1"}, labels: []string{"pg", "sqlite"}, want: `{"action":"accept","content":{"db":"sqlite"}}`},
		{name: "oneOf", mode: "form", schema: `{"type":"object","properties":{"db":{"type":"string","oneOf":[{"const":"pg","title":"Postgres"},{"const":"lite","title":"SQLite"}]}}}`,
			answers: []string{"0"}, labels: []string{"Postgres", "SQLite"}, want: `{"action":"accept","content":{"db":"pg"}}`},
		{name: "multi", mode: "form", schema: `{"type":"object","properties":{"dbs":{"type":"array","items":{"enum":["a","b","c"]}}}}`,
			answers: []string{"0", "2"}, labels: []string{"a", "b", "c"}, multi: true, want: `{"action":"accept","content":{"dbs":["a","c"]}}`},
		{name: "free form", mode: "form", schema: `{"type":"object","properties":{"n":{"type":"string"},"m":{"type":"number"}}}`,
			want: `{"action":"accept","content":{}}`},
		{name: "url", mode: "url", url: "https://example.com/login", want: `{"action":"accept"}`},
	} {
		p := &codexapp.McpElicitationParams{ServerName: "srv", Mode: c.mode, Message: "Pick", RequestedSchema: json.RawMessage(c.schema), URL: c.url}
		e := newElicitation(p)
		q := e.question
		if got := q.Labels([]string{"0", "1", "2"}); !slices.Equal(got, c.labels) && !(len(got) == 0 && c.labels == nil) || q.MultiSelect != c.multi {
			t.Errorf("%s: question %+v", c.name, q)
		}
		if c.url != "" && q.Prompt != "Pick\n"+c.url {
			t.Errorf("%s: prompt %q", c.name, q.Prompt)
		}
		got, _ := json.Marshal(e.answer(agent.Resolution{Decision: agent.Allow, Answers: c.answers}))
		if string(got) != c.want {
			t.Errorf("%s: allow answers %s, want %s", c.name, got, c.want)
		}
		if got, _ := json.Marshal(e.answer(agent.Resolution{Decision: agent.Deny})); string(got) != `{"action":"decline"}` {
			t.Errorf("%s: deny answers %s", c.name, got)
		}
	}
}

// An elicitation's request opens a question approval of its turn, named
// by its server; the resolution is answered as the elicitation's response.
func TestMapElicitationRequest(t *testing.T) {
	line := `{"id":7,"method":"mcpServer/elicitation/request","params":{"serverName":"db","threadId":"th","turnId":"tu","mode":"form",` +
		`"message":"Which database?","requestedSchema":{"type":"object","properties":{"db":{"type":"string","enum":["pg","sqlite"]}},"required":["db"]}}}`
	msg, err := codexapp.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	m := newMapper(func() time.Time { return replayTime })
	a := newApprovals()
	e := a.request(msg.(*codexapp.Request), m, replayTime)
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	ap := e.Approval
	if ap.Kind != agent.ApprovalQuestion || ap.Tool != "mcp:db" || ap.TurnID != "tu" || ap.Title != "Which database?" || ap.ID != "request-7" || len(ap.Question.Options) != 2 {
		t.Errorf("approval %+v", ap)
	}
	settled, err := a.settle(ap.ID, agent.Resolution{Decision: agent.Allow, Answers: []string{"0"}, Cause: agent.CauseClient})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(settled.response(*settled.first)); string(got) != `{"action":"accept","content":{"db":"pg"}}` {
		t.Errorf("response %s", got)
	}
}
