package opencode

import (
	"encoding/json"

	"github.com/tetherhq/tether/agent"
	oc "github.com/tetherhq/tether/protocol/opencode"
)

// toolItemType is the item a tool's calls become.
func toolItemType(tool string) agent.ItemType {
	switch tool {
	case "bash":
		return agent.ItemCommand
	case "edit", "write", "multiedit", "patch", "apply_patch":
		return agent.ItemFileChange
	case "todowrite":
		return agent.ItemPlan
	case "question":
		return agent.ItemQuestion
	}
	return agent.ItemToolCall
}

// toolInput is the fields of the tools' inputs that the items show.
type toolInput struct {
	Command  string `json:"command"`
	Workdir  string `json:"workdir"`
	FilePath string `json:"filePath"`
	Todos    []struct {
		Content string `json:"content"`
		Status  string `json:"status"`
	} `json:"todos"`
	Questions []oc.QuestionInfo `json:"questions"`
}

// toolMetadata is the fields of the tools' metadata that the items show:
// bash's output and exit code, a write's "exists", an edit's diff.
type toolMetadata struct {
	Output *string `json:"output"`
	Exit   *int    `json:"exit"`
	Exists *bool   `json:"exists"`
	Diff   string  `json:"diff"`
}

// applyTool sets item's typed fields from the tool part as it is now.
func applyTool(item *agent.Item, p *oc.ToolPart) {
	var in toolInput
	_ = json.Unmarshal(p.State.Input, &in) // a pending call's input may be partial or empty
	var meta toolMetadata
	_ = json.Unmarshal(p.State.Metadata, &meta)
	switch item.Type {
	case agent.ItemCommand:
		cmd := &agent.Command{Command: in.Command, Cwd: in.Workdir}
		if meta.Output != nil {
			cmd.Output = *meta.Output
		}
		switch p.State.Status {
		case oc.ToolCompleted:
			if cmd.Output == "" {
				cmd.Output = p.State.Output
			}
			cmd.ExitCode = meta.Exit
		case oc.ToolError:
			if cmd.Output == "" {
				cmd.Output = p.State.Error
			}
		}
		item.Command = cmd
	case agent.ItemFileChange:
		kind := agent.ChangeUpdate
		if p.Tool == "write" && meta.Exists != nil && !*meta.Exists {
			kind = agent.ChangeAdd
		}
		item.Changes = []agent.FileChange{}
		if in.FilePath != "" {
			item.Changes = append(item.Changes, agent.FileChange{Path: in.FilePath, Kind: kind, Diff: meta.Diff})
		}
	case agent.ItemQuestion:
		item.Question = &agent.Question{}
		if len(in.Questions) > 0 { // the first, as its approval asks it
			item.Question = questionOf(in.Questions[0])
		}
	case agent.ItemPlan:
		item.Plan = []agent.PlanStep{}
		for _, t := range in.Todos {
			item.Plan = append(item.Plan, agent.PlanStep{Text: t.Content, Status: t.Status})
		}
	default:
		tool := &agent.ToolCall{Name: p.Tool, Output: p.State.Output}
		if len(p.State.Input) > 0 && string(p.State.Input) != "{}" && string(p.State.Input) != "null" {
			tool.Input = append(json.RawMessage(nil), p.State.Input...)
		}
		if p.State.Status == oc.ToolError {
			tool.Output, tool.IsError = p.State.Error, true
		}
		item.Tool = tool
	}
}
