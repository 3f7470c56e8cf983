package agent

import (
	"encoding/json"
	"slices"
	"strconv"
)

// ItemType is what an item is.
type ItemType string

const (
	ItemUserMessage ItemType = "user_message" // the prompt, as the agent echoes it
	ItemMessage     ItemType = "message"      // the agent's text to the user
	ItemReasoning   ItemType = "reasoning"    // thinking the agent shows
	ItemToolCall    ItemType = "tool_call"    // any tool but a shell command or a file change
	ItemCommand     ItemType = "command"      // a shell command and its output
	ItemFileChange  ItemType = "file_change"  // files the agent wrote, with diffs where known
	ItemPlan        ItemType = "plan"         // a plan or todo list
	ItemQuestion    ItemType = "question"     // the agent asks the user to choose
)

// ItemTypes lists every item type.
func ItemTypes() []ItemType {
	return []ItemType{ItemUserMessage, ItemMessage, ItemReasoning, ItemToolCall, ItemCommand, ItemFileChange, ItemPlan, ItemQuestion}
}

// ItemStatus is where an item is in its life.
type ItemStatus string

const (
	ItemInProgress ItemStatus = "in_progress"
	ItemDone       ItemStatus = "completed"
	ItemFailed     ItemStatus = "failed"
	ItemDeclined   ItemStatus = "declined" // refused by an approval or a rule: it did not run
)

// Item is one unit of a turn's work. It starts, may stream deltas, and
// completes; the completed item is whole and authoritative, so a client
// that missed the deltas loses nothing. Exactly one of the typed fields
// below is set, as Type says (none for message, reasoning and user
// message, which have only Text).
type Item struct {
	ID     string     `json:"id"`
	Type   ItemType   `json:"type"`
	Status ItemStatus `json:"status"`
	// MessageID is the agent's message this item belongs to, where the
	// agent groups items in messages (clients that show messages and
	// their parts group by it).
	MessageID string `json:"message_id,omitempty"`
	// ParentID is the tool call of a subagent this item belongs to.
	ParentID string `json:"parent_id,omitempty"`
	Text     string `json:"text,omitempty"`

	Tool     *ToolCall    `json:"tool,omitempty"`
	Command  *Command     `json:"command,omitempty"`
	Changes  []FileChange `json:"changes,omitempty"`
	Plan     []PlanStep   `json:"plan,omitempty"`
	Question *Question    `json:"question,omitempty"`
}

// TextOnly says the item has no typed fields (tool, command, changes, plan,
// question): its text and ids are all it holds.
func (it *Item) TextOnly() bool {
	return it.Tool == nil && it.Command == nil && it.Changes == nil && it.Plan == nil && it.Question == nil
}

// ToolCall is a call of a tool other than a shell command.
type ToolCall struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input,omitempty"`
	// Output is the tool's result as text; IsError marks a failed call.
	Output  string `json:"output,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// Server is the MCP server of an MCP tool.
	Server string `json:"server,omitempty"`
}

// Command is a shell command the agent ran (or asked to run).
type Command struct {
	Command string `json:"command"`
	Cwd     string `json:"cwd,omitempty"`
	Output  string `json:"output,omitempty"`
	// ExitCode is nil until the command has ended (and for agents that do
	// not report it).
	ExitCode *int `json:"exit_code,omitempty"`
}

// ChangeKind is what happened to a file.
type ChangeKind string

const (
	ChangeAdd    ChangeKind = "add"
	ChangeUpdate ChangeKind = "update"
	ChangeDelete ChangeKind = "delete"
)

// FileChange is one file an agent changed. Diff is a unified diff where the
// agent gives one (or the driver can compute it).
type FileChange struct {
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
	Diff string     `json:"diff,omitempty"`
}

// PlanStep is one entry of a plan or todo list.
type PlanStep struct {
	Text   string `json:"text"`
	Status string `json:"status"` // pending, in_progress, completed
}

// Question is the agent asking the user to choose; the answer comes as the
// Resolution of the approval the question opens.
type Question struct {
	Prompt      string   `json:"prompt"`
	Options     []Option `json:"options,omitempty"`
	MultiSelect bool     `json:"multi_select,omitempty"`
}

// Option is one choice of a question.
type Option struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// NewQuestion is a question among labels, numbered from 0 as their ids:
// how the drivers name the options of an agent's own question.
func NewQuestion(prompt string, multiSelect bool, labels []string) *Question {
	q := &Question{Prompt: prompt, MultiSelect: multiSelect}
	for i, label := range labels {
		q.Options = append(q.Options, Option{ID: strconv.Itoa(i), Label: label})
	}
	return q
}

// Labels are the labels of the options ids name, in their order; an id of
// no option is passed over.
func (q *Question) Labels(ids []string) []string {
	labels := make([]string, 0, len(ids))
	for _, id := range ids {
		if i := slices.IndexFunc(q.Options, func(o Option) bool { return o.ID == id }); i >= 0 {
			labels = append(labels, q.Options[i].Label)
		}
	}
	return labels
}

// IDs are the ids of the options labels name, in their order; a label of
// no option is passed over.
func (q *Question) IDs(labels []string) []string {
	var ids []string
	for _, label := range labels {
		if i := slices.IndexFunc(q.Options, func(o Option) bool { return o.Label == label }); i >= 0 {
			ids = append(ids, q.Options[i].ID)
		}
	}
	return ids
}

// Field names what an item.delta extends.
type Field string

const (
	FieldText   Field = "text"   // a message's or reasoning's text
	FieldOutput Field = "output" // a command's or tool's output
	FieldInput  Field = "input"  // a tool call's input as it streams (partial JSON)
)

// Delta is a piece of an item in progress: Text appended to Field of item
// ItemID. Deltas are for showing progress; the completed item has it all.
type Delta struct {
	ItemID string `json:"item_id"`
	Field  Field  `json:"field"`
	Text   string `json:"text"`
}
