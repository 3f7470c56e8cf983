package eventview

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
)

// transcript records a Live view's writes, marking notes.
type transcript struct {
	out   strings.Builder
	notes []string
}

func (w *transcript) Text(t string) { w.out.WriteString(t) }
func (w *transcript) Line(t string) {
	if s := w.out.String(); s != "" && !strings.HasSuffix(s, "\n") {
		w.out.WriteString("\n")
	}
	w.out.WriteString(t + "\n")
}
func (w *transcript) Note(t string) { w.notes = append(w.notes, t) }

// mockEvents is one mock turn of prompt, its approvals answered by decide.
func mockEvents(t *testing.T, prompt string, decide agent.Decision) []agent.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := mock.New(mock.Config{}).Start(ctx, agent.StartRequest{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Prompt(ctx, agent.Prompt{Text: prompt}); err != nil {
		t.Fatal(err)
	}
	var events []agent.Event
	for e, err := range s.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
		if e.Kind == agent.KindApprovalRequested {
			r := agent.Resolution{ApprovalID: e.Approval.ID, Decision: decide, Answers: []string{"blue"}}
			if err := s.Resolve(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if e.Kind == agent.KindTurnCompleted {
			break
		}
	}
	return events
}

func TestLiveShowsAMockTurn(t *testing.T) {
	var w transcript
	v := NewLive(&w, Style{}, "")
	for _, e := range mockEvents(t, "hi "+mock.WordQuestion+" "+mock.WordApproval, agent.Deny) {
		v.Show(e)
	}
	want := `⏺ Question: Which colour should the mock use?
  ⎿ declined
⏺ Plan
  ✓ Read the prompt
  → Show every item type
  · Reply
⏺ $ echo "mock turn 1"
  ⎿ mock turn 1
⏺ Edit mock-notes.md
  ⎿ add +1 -0
⏺ mock_search: turn 1: hi ASK_QUESTION REQUEST_APPROVAL
  ⎿ declined: denied

Mock reply to turn 1: you said "hi ASK_QUESTION REQUEST_APPROVAL". You declined the question. The mock_search call was denied, so I did not run it. I noted it in mock-notes.md.
`
	if got := w.out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if len(w.notes) != 0 {
		t.Errorf("notes %q", w.notes)
	}
}

// Items that come whole, never started (as some agents give them), still
// get their ⏺ line and their result; a message that did not stream is
// printed from its completed item.
func TestLiveItemsThatComeWhole(t *testing.T) {
	var w transcript
	v := NewLive(&w, Style{}, "/w")
	exit := 2
	events := []agent.Event{
		{Kind: agent.KindItemCompleted, Item: &agent.Item{ID: "c", Type: agent.ItemCommand, Status: agent.ItemFailed,
			Command: &agent.Command{Command: "make test", Output: "FAIL\nline 2\n", ExitCode: &exit}}},
		{Kind: agent.KindItemCompleted, Item: &agent.Item{ID: "f", Type: agent.ItemFileChange, Status: agent.ItemDone,
			Changes: []agent.FileChange{{Path: "/w/a.go", Kind: agent.ChangeUpdate, Diff: "--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-x\n+y\n"}}}},
		{Kind: agent.KindItemCompleted, Item: &agent.Item{ID: "t", Type: agent.ItemToolCall, Status: agent.ItemDone,
			Tool: &agent.ToolCall{Name: "Read", Input: json.RawMessage(`{"file_path":"/w/b.go"}`), Output: "package b"}}},
		{Kind: agent.KindItemCompleted, Item: &agent.Item{ID: "m", Type: agent.ItemMessage, Status: agent.ItemDone, Text: "All done.\n"}},
		{Kind: agent.KindError, Error: &agent.Error{Code: agent.ErrorAPI, Status: 529, Message: "overloaded", Retrying: true}},
	}
	for _, e := range events {
		v.Show(e)
	}
	want := "⏺ $ make test\n  ⎿ error: FAIL … +1 lines (exit 2)\n⏺ Edit a.go\n  ⎿ update +1 -1\n⏺ Read b.go\n  ⎿ package b\n\nAll done.\n"
	if got := w.out.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if len(w.notes) != 1 || w.notes[0] != "api_error 529: overloaded (retrying)" {
		t.Errorf("notes %q", w.notes)
	}
}

// Compact prints what attach always printed.
func TestCompact(t *testing.T) {
	var b bytes.Buffer
	for _, e := range mockEvents(t, "hi", agent.Allow) {
		Compact(&b, e)
	}
	got := b.String()
	for _, want := range []string{"> hi\n", "$ echo \"mock turn 1\"  [completed]\n", "~ add mock-notes.md  [completed]\n",
		"⚙ mock_search  [completed]\n", "- [pending] Reply\n", "✓ completed\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
}
