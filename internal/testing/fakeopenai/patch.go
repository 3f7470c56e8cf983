package fakeopenai

import (
	"strings"

	"github.com/tetherhq/tether/internal/testing/fakehttp"
)

// trigPatch asks for a file edit with Codex's apply_patch tool:
//
//	USE_PATCH <path> [text]
//
// is a call of apply_patch (a custom, freeform tool of the Responses API)
// with a patch that adds the file <path> (relative to the workspace)
// holding the line [text] ("patched" when none follows). It is read only
// by the Responses API and only when the last input is not a tool result,
// so the call's result gets the usual "tool said: …" reply.
const trigPatch = "USE_PATCH"

// defaultPatchText is the line USE_PATCH writes when none follows the path.
const defaultPatchText = "patched"

// customToolCallItem is a Responses output item of a custom tool call.
type customToolCallItem struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status"`
	Name   string `json:"name"`
	CallID string `json:"call_id"`
	Input  string `json:"input"`
}

// customInputDeltaEvent and customInputDoneEvent stream a custom call's
// input.
type (
	customInputDeltaEvent struct {
		ItemID      string `json:"item_id"`
		OutputIndex int    `json:"output_index"`
		Delta       string `json:"delta"`
	}
	customInputDoneEvent struct {
		ItemID      string `json:"item_id"`
		OutputIndex int    `json:"output_index"`
		Input       string `json:"input"`
	}
)

// patchOf is the apply_patch input a turn asks for, if it does.
func patchOf(t turn) (string, bool) {
	if t.toolResult || t.title {
		return "", false
	}
	i := strings.Index(t.prompt, trigPatch)
	if i < 0 {
		return "", false
	}
	line, _, _ := strings.Cut(t.prompt[i+len(trigPatch):], "\n")
	path, text, _ := strings.Cut(strings.TrimSpace(line), " ")
	if path == "" {
		return "", false
	}
	if text = strings.TrimSpace(text); text == "" {
		text = defaultPatchText
	}
	return "*** Begin Patch\n*** Add File: " + path + "\n+" + text + "\n*** End Patch", true
}

// patchItem is the reply's custom call item, complete or as first announced.
func (rr *responseReply) patchItem(done bool) customToolCallItem {
	it := customToolCallItem{ID: rr.itemID, Type: "custom_tool_call", Status: "in_progress", Name: "apply_patch", CallID: rr.callID}
	if done {
		it.Status, it.Input = "completed", rr.patch
	}
	return it
}

func (rr *responseReply) streamPatch(st *responsesStream) error {
	for _, p := range fakehttp.Split(rr.patch, 16) {
		if err := st.emit("response.custom_tool_call_input.delta", customInputDeltaEvent{rr.itemID, 0, p}); err != nil {
			return err
		}
	}
	return st.emit("response.custom_tool_call_input.done", customInputDoneEvent{rr.itemID, 0, rr.patch})
}
