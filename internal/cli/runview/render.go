package runview

import (
	"fmt"
	"strings"
	"time"

	"github.com/tetherhq/tether/claude"
)

// view shows a run's messages and its end.
type view interface {
	message(claude.Message)
	finish(r *claude.ResultMessage, interrupted bool, elapsed time.Duration)
}

// rawView prints each message's line exactly as the CLI wrote it.
type rawView struct{ scr *screen }

func (v rawView) message(m claude.Message) { v.scr.raw(m.Raw()) }

// finish adds nothing: the result line already says it all.
func (rawView) finish(*claude.ResultMessage, bool, time.Duration) {}

// section is the kind of output printed last; a blank line separates
// prose from tool lines.
type section int

const (
	sectionNone section = iota
	sectionProse
	sectionTools
)

// humanView streams the conversation for a person: text as it arrives,
// one line per tool call and per tool result, and a summary.
type humanView struct {
	scr *screen
	st  style
	cwd string
	// deltas is set once text_delta events arrive: the whole text blocks
	// that follow repeat what was streamed and are not printed again.
	deltas bool
	last   section
	label  string      // the spinner's label until the next message
	shown  *shownTools // tool calls whose line is out, for approval questions
}

func newHumanView(scr *screen, st style, cwd string, shown *shownTools) *humanView {
	return &humanView{scr: scr, st: st, cwd: cwd, label: "thinking…", shown: shown}
}

func (v *humanView) message(msg claude.Message) {
	switch m := msg.(type) {
	case *claude.StreamEvent:
		v.streamEvent(m)
	case *claude.AssistantMessage:
		v.assistant(m)
	case *claude.UserMessage:
		v.toolResults(m)
	case *claude.SystemMessage:
		v.system(m)
	}
	v.scr.wait(v.label)
}

func (v *humanView) streamEvent(m *claude.StreamEvent) {
	if m.ParentToolUseID != nil {
		return // a subagent's text is its own business
	}
	if d, ok := m.TextDelta(); ok {
		v.deltas = true
		v.enter(sectionProse)
		v.scr.text(d)
		return
	}
	if m.Event.Type == "content_block_stop" {
		v.scr.endLine() // lets the spinner show while the next block comes
	}
}

func (v *humanView) assistant(m *claude.AssistantMessage) {
	sub := m.ParentToolUseID != nil
	for _, b := range m.Message.Content {
		switch b := b.(type) {
		case claude.TextBlock:
			if !sub && !v.deltas && strings.TrimSpace(b.Text) != "" {
				v.enter(sectionProse)
				v.scr.line(strings.TrimRight(b.Text, "\n"))
			}
		case claude.ToolUseBlock:
			v.toolUse(b, sub)
		}
	}
}

func (v *humanView) toolUse(b claude.ToolUseBlock, sub bool) {
	indent := ""
	if sub {
		indent = "  "
	}
	v.enter(sectionTools)
	v.scr.line(indent + v.st.green("⏺") + " " + toolSummary(b.Name, b.Input, v.cwd))
	v.shown.shown(b.ID)
	v.label = "running " + b.Name + "…"
}

func (v *humanView) toolResults(m *claude.UserMessage) {
	if m.ParentToolUseID != nil {
		return
	}
	for _, b := range m.Message.Content {
		if r, ok := b.(claude.ToolResultBlock); ok {
			v.toolResult(r)
		}
	}
}

func (v *humanView) toolResult(b claude.ToolResultBlock) {
	line, more := firstLine(toolResultText(b), clipResult)
	if line == "" {
		line = "(no output)"
	}
	if more > 0 {
		line += fmt.Sprintf(" … +%d lines", more)
	}
	if b.IsError {
		line = v.st.red("error: " + line)
	} else {
		line = v.st.dim(line)
	}
	v.enter(sectionTools)
	v.scr.line("  ⎿ " + line)
	v.label = "thinking…"
}

func (v *humanView) system(m *claude.SystemMessage) {
	switch {
	case m.Subtype == "api_retry":
		v.scr.note(v.st.dim(fmt.Sprintf("API error; retrying (attempt %d of %d)", m.Attempt, m.MaxRetries)))
	case m.Subtype == "status" && m.Status != nil && *m.Status == "compacting":
		v.label = "compacting the conversation…"
	case m.Subtype == "status":
		v.label = "thinking…"
	}
}

// enter starts output of kind s, with a blank line when the kind changes
// between prose and tool lines.
func (v *humanView) enter(s section) {
	if v.last != sectionNone && v.last != s {
		v.scr.line("")
	}
	v.last = s
}

func (v *humanView) finish(r *claude.ResultMessage, interrupted bool, elapsed time.Duration) {
	if v.last != sectionNone {
		v.scr.line("")
	}
	v.scr.line(summaryLine(r, interrupted, elapsed, v.st))
}

// summaryLine is the run's last line: outcome, turns, tokens, cost, time
// and the session id (in full: it is what --resume takes).
func summaryLine(r *claude.ResultMessage, interrupted bool, elapsed time.Duration, st style) string {
	head := st.green("✓") + " "
	switch {
	case wasInterrupted(r, interrupted):
		head = st.yellow("⏹ interrupted") + " · "
	case r.IsError:
		head = st.red("✗ "+failure(r)) + " · "
	}
	parts := []string{
		head + plural(r.NumTurns, "turn"),
		tokens(inputTokens(r.Usage)) + " in / " + tokens(r.Usage.OutputTokens) + " out",
		cost(r.TotalCostUSD),
		duration(elapsed),
	}
	if r.SessionID != "" {
		parts = append(parts, "session "+r.SessionID)
	}
	return strings.Join(parts, " · ")
}

// wasInterrupted: an error result after we asked for an interrupt, or one
// the CLI marks as aborted.
func wasInterrupted(r *claude.ResultMessage, requested bool) bool {
	return r.IsError && (requested || strings.HasPrefix(r.TerminalReason, "aborted"))
}

// failure says why a turn failed, in one short line. An API error says
// so with its status: its result's subtype reads "success".
func failure(r *claude.ResultMessage) string {
	if e := claude.AsAPIError(r); e != nil {
		line, _ := firstLine(e.Message, clipSummary)
		return fmt.Sprintf("API error %d: %s", e.Status, line)
	}
	msg := r.Result
	if msg == "" {
		msg = strings.Join(r.Errors, "; ")
	}
	if line, _ := firstLine(msg, clipSummary); line != "" {
		return r.Subtype + ": " + line
	}
	return r.Subtype
}

// exitFor is the exit code a result earns.
func exitFor(r *claude.ResultMessage) int {
	if r.IsError {
		return ExitFailed
	}
	return ExitOK
}
