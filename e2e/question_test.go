package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
)

// Claude Code's AskUserQuestion is a question approval of the sessions
// API: its options, an answer that is not one of them refused with the
// approval left open, and the chosen option reaching the real CLI, whose
// tool result (echoed by the fake model) names it.
func TestRealCLIClaudeQuestion(t *testing.T) {
	timed(t)
	r := startAgentRunner(t, "claude", false)
	ws := newWorkspaceID("claude")
	var info struct{ ID string }
	if code := r.api.call("POST", "/v1/sessions", `{"agent":"claude","workspace_id":"`+ws+`"}`, &info, ""); code != 201 {
		t.Fatalf("create: %d", code)
	}
	events := r.api.stream("/v1/sessions/" + info.ID + "/events")
	untilKind(t, events, agent.KindSessionStarted)
	input := `{"questions":[{"question":"Which colour should the page use?","header":"Colour","multiSelect":false,` +
		`"options":[{"label":"Red","description":"warm"},{"label":"Blue","description":"calm"}]}]}`
	body, _ := json.Marshal(map[string]string{"text": "USE_TOOL AskUserQuestion " + input})
	if code := r.api.call("POST", "/v1/sessions/"+info.ID+"/prompt", string(body), nil, ""); code != 202 {
		t.Fatalf("prompt: %d", code)
	}
	asked := untilKind(t, events, agent.KindApprovalRequested).Approval
	if asked.Kind != agent.ApprovalQuestion || asked.Question == nil || asked.Question.Prompt != "Which colour should the page use?" ||
		len(asked.Question.Options) != 2 || asked.Question.Options[1].Label != "Blue" {
		t.Fatalf("approval %+v question %+v", asked, asked.Question)
	}
	path := fmt.Sprintf("/v1/sessions/%s/approvals/%s/resolve", info.ID, asked.ID)
	req, _ := http.NewRequest("POST", r.api.base+path, strings.NewReader(`{"decision":"allow","answers":["7"]}`))
	req.Header.Set("Authorization", "Bearer "+r.api.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	refused, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(refused), `"code":"bad_answer"`) {
		t.Fatalf("an answer that is no option: %d %s", resp.StatusCode, refused)
	}
	if code := r.api.call("POST", path, `{"decision":"allow","answers":["1"]}`, nil, ""); code != 200 {
		t.Fatalf("resolve: %d", code)
	}
	var end agent.Event
	for end = untilAny(t, events); end.Kind != agent.KindTurnCompleted; end = untilAny(t, events) {
		if end.Kind == agent.KindApprovalRequested {
			t.Fatalf("a second approval: %+v", end.Approval)
		}
	}
	t.Logf("reply: %q", end.Turn.Text)
	if !strings.Contains(end.Turn.Text, "Blue") || strings.Contains(end.Turn.Text, "Red") {
		t.Fatalf("the CLI did not get the chosen option: %q", end.Turn.Text)
	}
}
