package eventview

import (
	"fmt"
	"strings"

	"github.com/tetherhq/tether/agent"
)

// Writer is where a live view prints.
type Writer interface {
	// Text writes streamed text as it comes, without a newline.
	Text(string)
	// Line writes a whole line, first ending a partial one.
	Line(string)
	// Note writes a line beside the conversation (stderr on a terminal).
	Note(string)
}

// section is the kind of output printed last; a blank line separates
// prose from tool lines.
type section int

const (
	sectionNone section = iota
	sectionProse
	sectionTools
)

// Live shows a session's events as they come, the way `tether run` shows
// Claude Code: the agent's text streamed, one ⏺ line per command, file
// change, tool call, plan or question when it starts and a ⎿ line with
// its result when it completes. Prompts, reasoning, usage and the turn's
// end print nothing: the caller prints its own summary.
type Live struct {
	w   Writer
	st  Style
	cwd string
	// streamed are messages whose text came in deltas: their completed
	// item is not printed again.
	streamed map[string]bool
	// midLine: the last streamed text did not end its line.
	midLine bool
	// open are items whose ⏺ line is out.
	open map[string]bool
	// types are the started items' types, by id.
	types map[string]agent.ItemType
	last  section
	label string
}

// NewLive returns a live view writing to w; cwd shortens paths inside it.
func NewLive(w Writer, st Style, cwd string) *Live {
	return &Live{w: w, st: st, cwd: cwd, streamed: map[string]bool{}, open: map[string]bool{}, types: map[string]agent.ItemType{}, label: "thinking…"}
}

// Waiting is what the agent is doing now, for a spinner's label.
func (v *Live) Waiting() string { return v.label }

// Printed reports whether anything was printed.
func (v *Live) Printed() bool { return v.last != sectionNone }

// Show prints what ev adds.
func (v *Live) Show(ev agent.Event) {
	switch ev.Kind {
	case agent.KindItemStarted:
		v.started(ev.Item)
	case agent.KindItemDelta:
		v.delta(ev.Delta)
	case agent.KindItemCompleted:
		v.completed(ev.Item)
	case agent.KindError:
		note := fmt.Sprintf("%s: %s", errorName(ev.Error), ev.Error.Message)
		if ev.Error.Retrying {
			note += " (retrying)"
		}
		v.w.Note(v.st.Dim(note))
	case agent.KindApprovalResolved:
		if r := ev.Resolution; r.Cause != agent.CauseClient {
			v.w.Note(v.st.Dim(fmt.Sprintf("approval %s: %s%s", r.ApprovalID, r.Decision, By(*r))))
		}
	}
}

func errorName(e *agent.Error) string {
	if e.Status != 0 {
		return fmt.Sprintf("%s %d", e.Code, e.Status)
	}
	return string(e.Code)
}

func (v *Live) started(it *agent.Item) {
	v.types[it.ID] = it.Type
	switch it.Type {
	case agent.ItemMessage:
		v.label = "writing…"
	case agent.ItemReasoning:
		v.label = "thinking…"
	case agent.ItemCommand, agent.ItemFileChange, agent.ItemToolCall, agent.ItemQuestion:
		v.head(it)
	}
}

// head prints an item's ⏺ line, once.
func (v *Live) head(it *agent.Item) {
	if v.open[it.ID] {
		return
	}
	v.open[it.ID] = true
	v.enter(sectionTools)
	v.w.Line(v.st.Green("⏺") + " " + v.Summary(it))
	v.label = "running " + v.Summary(it) + "…"
}

func (v *Live) delta(d *agent.Delta) {
	if d.Field != agent.FieldText || v.types[d.ItemID] != agent.ItemMessage {
		return
	}
	v.streamed[d.ItemID] = true
	v.enter(sectionProse)
	v.w.Text(d.Text)
	if d.Text != "" {
		v.midLine = !strings.HasSuffix(d.Text, "\n")
	}
}

func (v *Live) completed(it *agent.Item) {
	switch it.Type {
	case agent.ItemMessage:
		v.message(it)
	case agent.ItemCommand, agent.ItemFileChange, agent.ItemToolCall, agent.ItemQuestion:
		v.head(it) // items may come whole, never started
		v.result(it)
	case agent.ItemPlan:
		v.enter(sectionTools)
		v.w.Line(v.st.Green("⏺") + " Plan")
		for _, s := range it.Plan {
			v.w.Line("  " + planMark(s.Status) + " " + s.Text)
		}
	}
	v.label = "thinking…"
}

func (v *Live) message(it *agent.Item) {
	if v.streamed[it.ID] {
		if v.midLine {
			v.w.Text("\n")
			v.midLine = false
		}
		return
	}
	if text := strings.TrimRight(it.Text, "\n"); strings.TrimSpace(text) != "" {
		v.enter(sectionProse)
		v.w.Line(text)
	}
}

func planMark(status string) string {
	switch status {
	case "completed":
		return "✓"
	case "in_progress":
		return "→"
	}
	return "·"
}

// result prints an item's ⎿ line.
func (v *Live) result(it *agent.Item) {
	line := v.st.Dim(v.resultText(it))
	switch it.Status {
	case agent.ItemDeclined:
		line = v.st.Red("declined" + declinedWhy(it))
	case agent.ItemFailed:
		line = v.st.Red("error: " + v.resultText(it))
	}
	v.w.Line("  ⎿ " + line)
}

func declinedWhy(it *agent.Item) string {
	if it.Tool != nil && it.Tool.Output != "" {
		return ": " + ResultLine(it.Tool.Output)
	}
	return ""
}

func (v *Live) resultText(it *agent.Item) string {
	switch it.Type {
	case agent.ItemCommand:
		text := ResultLine(it.Command.Output)
		if c := it.Command.ExitCode; c != nil && *c != 0 {
			text += fmt.Sprintf(" (exit %d)", *c)
		}
		return text
	case agent.ItemFileChange:
		var parts []string
		for _, c := range it.Changes {
			added, removed := DiffStat(c.Diff)
			part := fmt.Sprintf("%s +%d -%d", c.Kind, added, removed)
			if len(it.Changes) > 1 {
				part = RelPath(c.Path, v.cwd) + " " + part
			}
			parts = append(parts, part)
		}
		if len(parts) == 0 {
			return "(no changes)"
		}
		return strings.Join(parts, ", ")
	case agent.ItemToolCall:
		return ResultLine(it.Tool.Output)
	case agent.ItemQuestion:
		if it.Text == "" {
			return "(no answer)"
		}
		return it.Text
	}
	return ""
}

// Summary names an item in a few words: "$ make test", "Write main.go",
// "mock_search: …".
func (v *Live) Summary(it *agent.Item) string {
	switch it.Type {
	case agent.ItemCommand:
		return "$ " + Clip(it.Command.Command)
	case agent.ItemFileChange:
		if len(it.Changes) == 0 {
			return "Edit"
		}
		names := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			names = append(names, RelPath(c.Path, v.cwd))
		}
		return "Edit " + strings.Join(names, ", ")
	case agent.ItemToolCall:
		return ToolSummary(it.Tool.Name, it.Tool.Input, v.cwd)
	case agent.ItemQuestion:
		return "Question: " + Clip(it.Question.Prompt)
	}
	return string(it.Type)
}

// enter starts output of kind s, with a blank line when the kind changes
// between prose and tool lines.
func (v *Live) enter(s section) {
	if v.last != sectionNone && v.last != s {
		v.w.Line("")
	}
	v.last = s
}
