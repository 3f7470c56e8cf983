package claudecli

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tetherhq/tether/agent"
	cc "github.com/tetherhq/tether/protocol/claudecode"
)

// classifyTool makes a tool_use the item type it is: Bash a command,
// Write/Edit/MultiEdit/NotebookEdit a file change, TodoWrite a plan,
// AskUserQuestion a question, anything else a tool call. input is nil
// while it streams.
func classifyTool(item *agent.Item, name string, input json.RawMessage) {
	var in struct {
		Command  string `json:"command"`
		FilePath string `json:"file_path"`
		Notebook string `json:"notebook_path"`
		Todos    []struct{ Content, Status string }
	}
	_ = json.Unmarshal(input, &in) // a tool's input is the model's; what does not decode stays raw below
	switch name {
	case "Bash":
		item.Type, item.Command = agent.ItemCommand, &agent.Command{Command: in.Command}
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		path := in.FilePath + in.Notebook
		kind := agent.ChangeUpdate
		if name == "Write" {
			kind = agent.ChangeAdd // refined from the result: Write also overwrites
		}
		item.Type, item.Changes = agent.ItemFileChange, []agent.FileChange{{Path: path, Kind: kind}}
	case "TodoWrite":
		item.Type, item.Plan = agent.ItemPlan, []agent.PlanStep{}
		for _, t := range in.Todos {
			item.Plan = append(item.Plan, agent.PlanStep{Text: t.Content, Status: t.Status})
		}
	case askTool:
		item.Type = agent.ItemQuestion
		if q, ok := askQuestion(input); ok {
			item.Question = q
		} else {
			item.Question = &agent.Question{} // still streaming, or no question in it
		}
	default:
		item.Type, item.Tool = agent.ItemToolCall, &agent.ToolCall{Name: name, Input: input}
		if server, _, ok := strings.Cut(strings.TrimPrefix(name, "mcp__"), "__"); ok && strings.HasPrefix(name, "mcp__") {
			item.Tool.Server = server
		}
	}
}

var exitCodeLine = regexp.MustCompile(`^Exit code (\d+)`)

// finishTool completes a tool item with its result.
func finishTool(item *agent.Item, output string, isError, declined bool) {
	switch {
	case declined:
		item.Status = agent.ItemDeclined
	case isError:
		item.Status = agent.ItemFailed
	default:
		item.Status = agent.ItemDone
	}
	switch item.Type {
	case agent.ItemCommand:
		item.Command.Output = output
		if m := exitCodeLine.FindStringSubmatch(output); isError && m != nil {
			code, _ := strconv.Atoi(m[1])
			item.Command.ExitCode = &code
		} else if !isError {
			zero := 0
			item.Command.ExitCode = &zero
		}
	case agent.ItemToolCall:
		item.Tool.Output, item.Tool.IsError = output, isError
	case agent.ItemMessage, agent.ItemReasoning, agent.ItemUserMessage:
	default:
		if isError && item.Text == "" {
			item.Text = output // why a file change, plan or question failed
		}
	}
}

// approvalRequested maps a can_use_tool request onto an approval. Its id
// is the control request's id, which the answer names.
func (m *canonicalMapper) approvalRequested(requestID string, req *cc.CanUseToolRequest, raw []byte) agent.Event {
	title := req.Title
	if title == "" {
		title = req.ToolName
		var in struct {
			Command  string `json:"command"`
			FilePath string `json:"file_path"`
		}
		if json.Unmarshal(req.Input, &in) == nil && in.Command+in.FilePath != "" {
			title += ": " + in.Command + in.FilePath
		}
	}
	e := m.event(agent.KindApprovalRequested, raw)
	e.Approval = &agent.Approval{ID: requestID, Kind: agent.ApprovalTool, SessionID: m.session, Agent: "claude",
		TurnID: m.turn, ItemID: req.ToolUseID, Tool: req.ToolName, Input: req.Input, Title: title,
		Scopes: []agent.Scope{agent.ScopeOnce, agent.ScopeSession, agent.ScopeAlways}, Created: m.now()}
	return e
}

// approvalResolved records a resolution; a deny makes the tool item
// declined when its result comes.
func (m *canonicalMapper) approvalResolved(toolUseID, tool string, r agent.Resolution) agent.Event {
	if r.Decision == agent.Deny && toolUseID != "" {
		m.declined[toolUseID] = true
	}
	if item := m.open[toolUseID]; item != nil && r.Decision == agent.Allow && len(r.Input) > 0 {
		// The call runs with the edited input: its item says what ran
		// (the path a Write writes, the command Bash runs).
		item.Command, item.Changes, item.Plan, item.Tool = nil, nil, nil, nil
		classifyTool(item, tool, r.Input)
	}
	if r.At.IsZero() {
		r.At = m.now()
	}
	e := m.event(agent.KindApprovalResolved, nil)
	e.Resolution = &r
	return e
}

// snapshot copies an item deep enough that later changes to the original
// do not show through.
func snapshot(it *agent.Item) *agent.Item {
	cp := *it
	if it.Tool != nil {
		tool := *it.Tool
		cp.Tool = &tool
	}
	if it.Command != nil {
		cmd := *it.Command
		cp.Command = &cmd
	}
	if it.Question != nil {
		q := *it.Question
		q.Options = slices.Clone(q.Options)
		cp.Question = &q
	}
	cp.Changes, cp.Plan = slices.Clone(it.Changes), slices.Clone(it.Plan)
	return &cp
}
