package eventview

import (
	"fmt"
	"io"

	"github.com/tetherhq/tether/agent"
)

// Compact prints ev as a line for people, as `tether attach` follows a
// session; deltas and bookkeeping print nothing (the completed item says
// it all).
func Compact(w io.Writer, ev agent.Event) {
	switch ev.Kind {
	case agent.KindSessionStarted:
		fmt.Fprintf(w, "● session %s (%s)\n", ev.SessionID, ev.Session.Agent)
	case agent.KindItemCompleted:
		compactItem(w, ev.Item)
	case agent.KindApprovalResolved:
		r := ev.Resolution
		fmt.Fprintf(w, "  %s%s\n", r.Decision, By(*r))
	case agent.KindError:
		fmt.Fprintf(w, "! %s: %s\n", ev.Error.Code, ev.Error.Message)
	case agent.KindTurnCompleted:
		line := "✓ " + string(ev.Turn.Status)
		if ev.Error != nil {
			line = "✗ " + string(ev.Turn.Status) + ": " + ev.Error.Message
		}
		fmt.Fprintln(w, line)
	case agent.KindSessionEnded:
		fmt.Fprintf(w, "● session ended (%s)\n", ev.Session.Reason)
	}
}

func compactItem(w io.Writer, it *agent.Item) {
	switch it.Type {
	case agent.ItemUserMessage:
		fmt.Fprintf(w, "> %s\n", firstLine(it.Text))
	case agent.ItemMessage:
		fmt.Fprintln(w, it.Text)
	case agent.ItemCommand:
		fmt.Fprintf(w, "$ %s  [%s]\n", it.Command.Command, it.Status)
	case agent.ItemFileChange:
		for _, c := range it.Changes {
			fmt.Fprintf(w, "~ %s %s  [%s]\n", c.Kind, c.Path, it.Status)
		}
	case agent.ItemToolCall:
		fmt.Fprintf(w, "⚙ %s  [%s]\n", it.Tool.Name, it.Status)
	case agent.ItemPlan:
		for _, s := range it.Plan {
			fmt.Fprintf(w, "- [%s] %s\n", s.Status, s.Text)
		}
	case agent.ItemQuestion:
		fmt.Fprintf(w, "? %s\n", it.Question.Prompt)
	}
}

// By says who resolved an approval, when it was not simply a client:
// " by NAME", " (expired)", or nothing.
func By(r agent.Resolution) string {
	switch {
	case r.By != "":
		return " by " + r.By
	case r.Cause != agent.CauseClient && r.Cause != "":
		return " (" + string(r.Cause) + ")"
	}
	return ""
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
