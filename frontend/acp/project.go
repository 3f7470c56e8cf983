package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
)

// projector maps one session's canonical events onto session/update
// notifications. It remembers which items it announced and which
// streamed their text, so a completed item repeats nothing.
type projector struct {
	cwd      string
	started  map[string]bool // tool calls announced with tool_call
	streamed map[string]bool // messages and thoughts sent in deltas
	titles   map[string]string
}

func newProjector(cwd string) *projector {
	return &projector{cwd: cwd, started: map[string]bool{}, streamed: map[string]bool{}, titles: map[string]string{}}
}

// project is e's updates; replay also sends the user's own messages
// (the editor sent them live, so a live turn does not echo them).
func (p *projector) project(e agent.Event, replay bool) []acpsdk.SessionUpdate {
	switch e.Kind {
	case agent.KindItemDelta:
		return p.delta(e.Delta)
	case agent.KindItemStarted:
		return p.item(e.Item, false, replay)
	case agent.KindItemCompleted:
		return p.item(e.Item, true, replay)
	}
	return nil
}

func (p *projector) delta(d *agent.Delta) []acpsdk.SessionUpdate {
	if d == nil || d.Text == "" {
		return nil
	}
	switch {
	case d.Field == agent.FieldText && !p.started[d.ItemID]:
		p.streamed[d.ItemID] = true
		if p.titles[d.ItemID] == string(agent.ItemReasoning) {
			return []acpsdk.SessionUpdate{acpsdk.UpdateAgentThoughtText(d.Text)}
		}
		return []acpsdk.SessionUpdate{acpsdk.UpdateAgentMessageText(d.Text)}
	case d.Field == agent.FieldOutput && p.started[d.ItemID]:
		return []acpsdk.SessionUpdate{acpsdk.UpdateToolCall(acpsdk.ToolCallId(d.ItemID),
			acpsdk.WithUpdateContent([]acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(d.Text))}))}
	}
	return nil
}

func (p *projector) item(it *agent.Item, completed, replay bool) []acpsdk.SessionUpdate {
	if it == nil {
		return nil
	}
	switch it.Type {
	case agent.ItemUserMessage:
		if replay && completed && it.Text != "" {
			return []acpsdk.SessionUpdate{acpsdk.UpdateUserMessageText(it.Text)}
		}
	case agent.ItemMessage, agent.ItemReasoning:
		p.titles[it.ID] = string(it.Type)
		if !completed || p.streamed[it.ID] || it.Text == "" {
			return nil
		}
		if it.Type == agent.ItemReasoning {
			return []acpsdk.SessionUpdate{acpsdk.UpdateAgentThoughtText(it.Text)}
		}
		return []acpsdk.SessionUpdate{acpsdk.UpdateAgentMessageText(it.Text)}
	case agent.ItemPlan:
		return []acpsdk.SessionUpdate{plan(it.Plan)}
	case agent.ItemToolCall, agent.ItemCommand, agent.ItemFileChange:
		return p.tool(it, completed)
	}
	return nil
}

func plan(steps []agent.PlanStep) acpsdk.SessionUpdate {
	entries := make([]acpsdk.PlanEntry, 0, len(steps))
	for _, s := range steps {
		status := acpsdk.PlanEntryStatusPending
		switch s.Status {
		case "in_progress":
			status = acpsdk.PlanEntryStatusInProgress
		case "completed":
			status = acpsdk.PlanEntryStatusCompleted
		}
		entries = append(entries, acpsdk.PlanEntry{Content: s.Text, Priority: acpsdk.PlanEntryPriorityMedium, Status: status})
	}
	return acpsdk.UpdatePlan(entries...)
}

// toolCall is what a permission request says of the item it is about.
func (p *projector) toolCall(itemID string) acpsdk.ToolCallUpdate {
	tc := acpsdk.ToolCallUpdate{ToolCallId: acpsdk.ToolCallId(itemID)}
	if t, ok := p.titles[itemID]; ok {
		tc.Title = acpsdk.Ptr(t)
	}
	return tc
}

// tool announces a tool call when it starts (or first shows completed)
// and updates it with its status, output, locations and diffs.
func (p *projector) tool(it *agent.Item, completed bool) []acpsdk.SessionUpdate {
	id := acpsdk.ToolCallId(it.ID)
	kind, title, raw := describe(it)
	locs := p.locations(it)
	content := p.content(it, completed)
	status := toolStatus(it.Status)
	p.titles[it.ID] = title
	if !p.started[it.ID] {
		p.started[it.ID] = true
		opts := []acpsdk.ToolCallStartOpt{acpsdk.WithStartKind(kind), acpsdk.WithStartStatus(status)}
		if len(locs) > 0 {
			opts = append(opts, acpsdk.WithStartLocations(locs))
		}
		if len(content) > 0 {
			opts = append(opts, acpsdk.WithStartContent(content))
		}
		if raw != nil {
			opts = append(opts, acpsdk.WithStartRawInput(raw))
		}
		return []acpsdk.SessionUpdate{acpsdk.StartToolCall(id, title, opts...)}
	}
	opts := []acpsdk.ToolCallUpdateOpt{acpsdk.WithUpdateStatus(status), acpsdk.WithUpdateTitle(title)}
	if len(locs) > 0 {
		opts = append(opts, acpsdk.WithUpdateLocations(locs))
	}
	if len(content) > 0 {
		opts = append(opts, acpsdk.WithUpdateContent(content))
	}
	return []acpsdk.SessionUpdate{acpsdk.UpdateToolCall(id, opts...)}
}

func toolStatus(s agent.ItemStatus) acpsdk.ToolCallStatus {
	switch s {
	case agent.ItemDone:
		return acpsdk.ToolCallStatusCompleted
	case agent.ItemFailed, agent.ItemDeclined:
		return acpsdk.ToolCallStatusFailed
	}
	return acpsdk.ToolCallStatusInProgress
}

// describe is a tool item's ACP kind, title and raw input.
func describe(it *agent.Item) (acpsdk.ToolKind, string, any) {
	switch {
	case it.Command != nil:
		return acpsdk.ToolKindExecute, it.Command.Command, map[string]any{"command": it.Command.Command}
	case it.Type == agent.ItemFileChange:
		paths := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			paths = append(paths, c.Path)
		}
		if len(paths) == 0 {
			return acpsdk.ToolKindEdit, "Edit", nil
		}
		return acpsdk.ToolKindEdit, "Edit " + strings.Join(paths, ", "), nil
	case it.Tool != nil:
		var raw any
		if len(it.Tool.Input) > 0 && json.Unmarshal(it.Tool.Input, &raw) != nil {
			raw = nil
		}
		return toolKind(it.Tool.Name), it.Tool.Name, raw
	}
	return acpsdk.ToolKindOther, string(it.Type), nil
}

// toolKind guesses ACP's kind from a tool's name: the agents' common
// names for reading, searching, fetching and editing.
func toolKind(name string) acpsdk.ToolKind {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "read") || n == "view" || n == "ls" || n == "list":
		return acpsdk.ToolKindRead
	case strings.Contains(n, "grep") || strings.Contains(n, "glob") || strings.Contains(n, "search") || n == "find":
		return acpsdk.ToolKindSearch
	case strings.Contains(n, "fetch") || strings.Contains(n, "web"):
		return acpsdk.ToolKindFetch
	case strings.Contains(n, "edit") || strings.Contains(n, "write") || strings.Contains(n, "patch"):
		return acpsdk.ToolKindEdit
	case strings.Contains(n, "bash") || strings.Contains(n, "shell") || strings.Contains(n, "exec"):
		return acpsdk.ToolKindExecute
	case strings.Contains(n, "think"):
		return acpsdk.ToolKindThink
	}
	return acpsdk.ToolKindOther
}

func (p *projector) abs(path string) string {
	if filepath.IsAbs(path) || p.cwd == "" {
		return path
	}
	return filepath.Join(p.cwd, path)
}

func (p *projector) locations(it *agent.Item) []acpsdk.ToolCallLocation {
	var locs []acpsdk.ToolCallLocation
	for _, c := range it.Changes {
		locs = append(locs, acpsdk.ToolCallLocation{Path: p.abs(c.Path)})
	}
	if it.Tool != nil && len(it.Tool.Input) > 0 {
		var in struct {
			Path     string `json:"path"`
			FilePath string `json:"file_path"`
		}
		if json.Unmarshal(it.Tool.Input, &in) == nil {
			if path := firstOf(in.FilePath, in.Path); path != "" {
				locs = append(locs, acpsdk.ToolCallLocation{Path: p.abs(path)})
			}
		}
	}
	return locs
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// content is a completed item's output and diffs.
func (p *projector) content(it *agent.Item, completed bool) []acpsdk.ToolCallContent {
	if !completed {
		return nil
	}
	var out []acpsdk.ToolCallContent
	text := ""
	switch {
	case it.Command != nil:
		text = it.Command.Output
	case it.Tool != nil:
		text = it.Tool.Output
	}
	if text != "" {
		out = append(out, acpsdk.ToolContent(acpsdk.TextBlock(text)))
	}
	for _, c := range it.Changes {
		out = append(out, p.diff(c))
	}
	return out
}

// diff is a file change as ACP's diff: the new text read from the
// workspace, the old one the unified diff taken back from it. A diff
// that does not apply shows as text.
func (p *projector) diff(c agent.FileChange) acpsdk.ToolCallContent {
	path := p.abs(c.Path)
	newText := ""
	if c.Kind != agent.ChangeDelete {
		data, err := os.ReadFile(path)
		if err != nil {
			return acpsdk.ToolContent(acpsdk.TextBlock(c.Diff))
		}
		newText = string(data)
	}
	if c.Kind == agent.ChangeAdd {
		return acpsdk.ToolDiffContent(path, newText)
	}
	oldText, err := Unapply(newText, c.Diff)
	if err != nil {
		return acpsdk.ToolContent(acpsdk.TextBlock(c.Diff))
	}
	return acpsdk.ToolDiffContent(path, newText, oldText)
}
