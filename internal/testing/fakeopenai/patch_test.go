package fakeopenai

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// USE_PATCH streams a custom apply_patch call whose input deltas add up to
// a patch adding the file; a tool result after it gets the usual reply.
func TestResponsesPatchCall(t *testing.T) {
	srv, c := startServer(t, Options{})
	resp := post(t.Context(), t, c, srv.URL()+"/v1/responses", respBody(true, []string{"apply_patch"}, userItem("please USE_PATCH notes/a.txt hi there")))
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	evs := readSSE(t, resp.Body)
	names := eventNames(evs)
	if names[2] != "response.output_item.added" || names[len(names)-3] != "response.custom_tool_call_input.done" ||
		!slices.Contains(names, "response.custom_tool_call_input.delta") || names[len(names)-1] != "response.completed" {
		t.Fatalf("events %q", names)
	}
	want := "*** Begin Patch\n*** Add File: notes/a.txt\n+hi there\n*** End Patch"
	var deltas strings.Builder
	var done struct {
		Item struct {
			Type, Name, Input, Status string
			CallID                    string `json:"call_id"`
		} `json:"item"`
	}
	for _, e := range evs {
		var ev struct {
			Delta string `json:"delta"`
			Input string `json:"input"`
		}
		if err := json.Unmarshal(e.data, &ev); err != nil {
			t.Fatal(err)
		}
		switch e.name {
		case "response.custom_tool_call_input.delta":
			deltas.WriteString(ev.Delta)
		case "response.custom_tool_call_input.done":
			if ev.Input != want {
				t.Errorf("input done %q", ev.Input)
			}
		case "response.output_item.done":
			if err := json.Unmarshal(e.data, &done); err != nil {
				t.Fatal(err)
			}
		}
	}
	if deltas.String() != want {
		t.Errorf("deltas built %q, want %q", deltas.String(), want)
	}
	if it := done.Item; it.Type != "custom_tool_call" || it.Name != "apply_patch" || it.Input != want || it.Status != "completed" || it.CallID == "" {
		t.Errorf("item %+v", it)
	}
}

func TestPatchOf(t *testing.T) {
	for prompt, want := range map[string]string{
		"USE_PATCH a.txt":          "*** Begin Patch\n*** Add File: a.txt\n+patched\n*** End Patch",
		"x USE_PATCH b/c.md two w": "*** Begin Patch\n*** Add File: b/c.md\n+two w\n*** End Patch",
		"USE_PATCH":                "",
		"SAY hi":                   "",
	} {
		got, ok := patchOf(turn{prompt: prompt})
		if got != want || ok != (want != "") {
			t.Errorf("patchOf(%q) = %q, %v; want %q", prompt, got, ok, want)
		}
	}
	if _, ok := patchOf(turn{prompt: "USE_PATCH a.txt", toolResult: true}); ok {
		t.Error("a tool result asked for the patch again")
	}
}
