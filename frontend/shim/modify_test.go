package shim_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/shimclient"
)

// A modify's modifiedArgs is what the call runs with where the agent takes
// edited input (Claude Code): the Write writes what the backend changed it
// to, laid over the model's input, and not what the model asked, and the
// completed tool_call carries the input that ran.
func TestModifyRunsTheModifiedCall(t *testing.T) {
	h := start(t, newMockClaude(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("write it"), nil)
	seen := events.Until("decision/tool_approval", wait)
	d := seen[len(seen)-1]
	if d.Str("toolName") != "Write" {
		t.Fatalf("decision %+v", d.Event)
	}
	edited := filepath.Join(h.dir, "edited.txt")
	h.Must(200, "POST", "/resolve", map[string]any{"decisionId": d.Str("decisionId"), "resolution": map[string]any{
		"type": "tool_approval", "action": "modify", "modifiedArgs": map[string]any{"file_path": edited}, "actionKind": "update"}}, nil)
	done := events.Until("completion", wait)
	if c := done[len(done)-1]; c.Str("outcome") != "success" {
		t.Fatalf("completion %+v", c.Event)
	}
	asked, _ := d.Event["toolArgs"].(map[string]any)
	if got, err := os.ReadFile(edited); err != nil || string(got) != asked["content"] {
		t.Errorf("edited.txt = %q, %v; want the model's content %q", got, err, asked["content"])
	}
	if _, err := os.Stat(filepath.Join(h.dir, "hello.txt")); err == nil {
		t.Error("the call ran with the arguments the model asked")
	}
	// The tool_call tells what ran: the modified arguments.
	i := slices.IndexFunc(done, func(e shimclient.Envelope) bool { return e.Type() == "tool_call" && e.Str("phase") == "completed" })
	if i < 0 {
		t.Fatalf("no completed call: %v", describe(done))
	}
	if in, _ := done[i].Event["input"].(map[string]any); in["file_path"] != edited || in["content"] != asked["content"] {
		t.Errorf("the completed call's input %v is not what ran", in)
	}
}

// Where the agent takes no edited input (the mock), a modify with
// arguments denies the call, and the model is told the arguments to make
// it again with; a modify without arguments allows it as asked; arguments
// that are no object are refused.
func TestModifyWhereTheAgentTakesNoEditedInput(t *testing.T) {
	h := start(t, newMock(), nil)
	events := h.Events("")
	h.Must(200, "POST", "/spawn", brief("REQUEST_APPROVAL"), nil)
	seen := events.Until("decision/tool_approval", wait)
	id := seen[len(seen)-1].Str("decisionId")
	h.Must(422, "POST", "/resolve", map[string]any{"decisionId": id, "resolution": map[string]any{
		"type": "tool_approval", "action": "modify", "modifiedArgs": []string{"not", "an", "object"}}}, nil)
	h.Must(200, "POST", "/resolve", map[string]any{"decisionId": id, "resolution": map[string]any{
		"type": "tool_approval", "action": "modify", "modifiedArgs": map[string]any{"query": "something else"}}}, nil)
	rest := events.Until("completion", wait)
	i := slices.IndexFunc(rest, func(e shimclient.Envelope) bool { return e.Type() == "tool_call" && e.Str("toolName") == "mock_search" })
	if i < 0 || rest[i].Str("phase") != "failed" || rest[i].Event["approved"] != false {
		t.Fatalf("the call modified where it cannot be: %v", describe(rest))
	}
	if s := rest[len(rest)-1].Str("summary"); !strings.Contains(s, `changed its arguments to {"query":"something else"}`) {
		t.Errorf("the model was not told the arguments: %q", s)
	}

	h.Must(200, "POST", "/spawn", brief("REQUEST_APPROVAL"), nil)
	seen = events.Until("decision/tool_approval", wait)
	h.Must(200, "POST", "/resolve", map[string]any{"decisionId": seen[len(seen)-1].Str("decisionId"), "resolution": map[string]any{
		"type": "tool_approval", "action": "modify"}}, nil)
	rest = events.Until("completion", wait)
	if s := rest[len(rest)-1].Str("summary"); !strings.Contains(s, "was allowed") {
		t.Errorf("a modify without arguments: %q", s)
	}
}
