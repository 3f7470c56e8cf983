package opencode

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// promptParts sends a prompt of parts to the session's server as another
// client of it would (the driver's own prompts are text).
func promptParts(t *testing.T, r *run, parts ...oc.PartInput) {
	t.Helper()
	s := r.s.(*session)
	path, err := oc.SessionPromptAsyncPath(s.native)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.api.do(ctxT(t), http.MethodPost, path, oc.PromptRequest{Parts: parts}, nil); err != nil {
		t.Fatalf("prompt: %v", err)
	}
}

// toolCalls are the completed tool_call items of evs by name: their inputs.
func toolCalls(evs []agent.Event) map[string][]string {
	out := map[string][]string{}
	for _, e := range find(evs, agent.KindItemCompleted, agent.ItemToolCall) {
		out[e.Item.Tool.Name] = append(out[e.Item.Tool.Name], string(e.Item.Tool.Input))
	}
	return out
}

// A prompt's files and @agent mention are tool_call items of their own
// (file, agent: their fields, a data: URL left out); a subtask (a
// command's prompt for a subagent) is the turn's user message, and the
// subagent's run the task tool's call. Messages shows them the same way.
func TestRealCLIPromptParts(t *testing.T) {
	env := newRealEnv(t, nil)
	notes := filepath.Join(env.ws, "notes.txt")
	if err := os.WriteFile(notes, []byte("some notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := env.start(t, agent.StartRequest{})
	promptParts(t, r,
		oc.TextInput{Text: "SAY read @notes.txt"},
		oc.FileInput{Mime: "text/plain", Filename: "notes.txt", URL: "file://" + notes,
			Source: &oc.FilePartSource{Type: "file", Path: notes, Text: oc.FileSourceText{Value: "@notes.txt", Start: 9, End: 19}}},
		oc.FileInput{Mime: "text/plain", Filename: "inline.txt", URL: "data:text/plain;base64,aGVsbG8K"},
		oc.AgentInput{Name: "general"})
	if end := r.turnEnd(); end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("turn %+v %+v", end.Turn, end.Error)
	}
	users := find(r.seen, agent.KindItemCompleted, agent.ItemUserMessage)
	if len(users) != 1 || users[0].Item.Text != "SAY read @notes.txt" {
		t.Errorf("user messages %+v (the synthetic ones OpenCode adds are not the prompt)", users)
	}
	calls := toolCalls(r.seen)
	wantFiles := []string{
		`{"filename":"notes.txt","mime":"text/plain","url":"file://` + notes + `","path":"` + notes + `"}`,
		`{"filename":"inline.txt","mime":"text/plain"}`,
	}
	if got := calls["file"]; len(got) != 2 || got[0] != wantFiles[0] || got[1] != wantFiles[1] {
		t.Errorf("file items %q, want %q", got, wantFiles)
	}
	if got := calls["agent"]; len(got) != 1 || got[0] != `{"name":"general"}` {
		t.Errorf("agent items %q", got)
	}

	from := len(r.seen)
	promptParts(t, r, oc.SubtaskInput{Prompt: "SAY from the subagent", Description: "say something", Agent: "general"})
	if end := r.turnEnd(); end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("subtask turn %+v %+v", end.Turn, end.Error)
	}
	turn := r.seen[from:]
	if users := find(turn, agent.KindItemCompleted, agent.ItemUserMessage); len(users) != 1 || users[0].Item.Text != "SAY from the subagent" {
		t.Errorf("the subtask's user messages %+v; events %s", users, kinds(turn))
	}
	task := toolCalls(turn)["task"]
	var in struct {
		Agent string `json:"subagent_type"`
	}
	if len(task) != 1 || json.Unmarshal([]byte(task[0]), &in) != nil || in.Agent != "general" {
		t.Errorf("the subagent's task call %q", task)
	}

	items, err := r.s.Messages(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		switch it.Type {
		case agent.ItemUserMessage:
			got = append(got, "user: "+it.Text)
		case agent.ItemToolCall:
			got = append(got, "tool: "+it.Tool.Name)
		}
	}
	want := []string{"user: SAY read @notes.txt", "tool: file", "tool: file", "tool: agent", "user: SAY from the subagent", "tool: task"}
	if len(got) != len(want) {
		t.Fatalf("Messages %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Messages %q, want %q", got, want)
		}
	}
}

// A prompt's image goes to OpenCode as a file part with a data: URL and
// reaches the model's request as an image of the same bytes (the test's
// model declares image input); the turn's user message is its text.
func TestRealCLIPromptImage(t *testing.T) {
	env := newRealEnv(t, nil)
	if !env.driver.Capabilities().Images {
		t.Fatal("opencode takes images")
	}
	r := env.start(t, agent.StartRequest{})
	png, err := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.s.Prompt(ctxT(t), agent.Prompt{Text: "SAY a pixel", Images: []agent.Image{{MediaType: "image/gif", Data: nil}}}); !errors.Is(err, agent.ErrInvalidImage) {
		t.Fatalf("an image without data: %v", err)
	}
	if err := r.s.Prompt(ctxT(t), agent.Prompt{Text: "SAY a pixel", Images: []agent.Image{{MediaType: "image/png", Data: png}}}); err != nil {
		t.Fatal(err)
	}
	if end := r.turnEnd(); end.Turn.Status != agent.TurnCompleted || end.Turn.Text != "a pixel" {
		t.Fatalf("turn %+v %+v", end.Turn, end.Error)
	}
	if users := find(r.seen, agent.KindItemCompleted, agent.ItemUserMessage); len(users) != 1 || users[0].Item.Text != "SAY a pixel" {
		t.Errorf("user messages %+v", users)
	}
	if files := toolCalls(r.seen)["file"]; len(files) != 1 || files[0] != `{"mime":"image/png"}` {
		t.Errorf("the image's file item %q", files)
	}
	images := env.fake.Images()
	if len(images) != 1 || images[0].MediaType != "image/png" || !bytes.Equal(images[0].Data, png) {
		t.Fatalf("the model was sent images %+v, want the prompt's", images)
	}
}
