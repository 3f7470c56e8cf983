package opencode

import (
	"encoding/json"
	"strings"

	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// attachmentItem is a file or agent part, which the canonical model has
// no type for, as a tool_call named by the part's type with its fields as
// input (how the drivers show what they cannot type): a file attached to
// the prompt (or a tool's result) and an @agent mention. A file's data:
// URL is left out of the input; the event's raw keeps it.
func attachmentItem(part oc.Part) agent.Item {
	b := part.Base()
	var name string
	var input any
	switch p := part.(type) {
	case *oc.FilePart:
		name, input = oc.PartFile, fileInput(p)
	case *oc.AgentPart:
		name, input = oc.PartAgent, struct {
			Name string `json:"name"`
		}{p.Name}
	}
	in, _ := json.Marshal(input) // strings only: it always encodes
	return agent.Item{ID: b.ID, Type: agent.ItemToolCall, Status: agent.ItemDone, MessageID: b.MessageID,
		Tool: &agent.ToolCall{Name: name, Input: in}}
}

// attachedFile is a file part's input: where the file is, when it is not
// in the URL itself.
type attachedFile struct {
	Filename string `json:"filename,omitempty"`
	Mime     string `json:"mime"`
	URL      string `json:"url,omitempty"`
	Path     string `json:"path,omitempty"`
}

func fileInput(p *oc.FilePart) attachedFile {
	f := attachedFile{Filename: p.Filename, Mime: p.Mime}
	if !strings.HasPrefix(p.URL, "data:") {
		f.URL = p.URL
	}
	if p.Source != nil {
		f.Path = p.Source.Path
	}
	return f
}
