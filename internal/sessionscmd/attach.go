package sessionscmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
)

// AttachOptions say how to follow a session.
type AttachOptions struct {
	SessionID string
	// Prompt, if set, starts a turn once attached.
	Prompt string
	// In answers the session's approvals (y to allow, anything else
	// denies) when set: a terminal. Nil only watches; someone else
	// answers.
	In io.Reader
	// After is the last seq already seen (0: the whole session).
	After uint64
	// UntilTurnEnd returns after the next turn ends instead of the
	// session's end.
	UntilTurnEnd bool
}

// Attach follows a session live: its text, commands, tool calls and
// approvals, one line each, until it ends.
func Attach(ctx context.Context, e Env, o AttachOptions) int {
	if o.Prompt != "" {
		if err := e.Client.Prompt(ctx, o.SessionID, o.Prompt); err != nil {
			return e.fail(err)
		}
	}
	var answers *bufio.Reader
	if o.In != nil {
		answers = bufio.NewReader(o.In)
	}
	prompted := o.Prompt != ""
	for ev, err := range e.Client.Events(ctx, o.SessionID, o.After, 0) {
		if err != nil {
			return e.fail(err)
		}
		if e.JSON {
			_ = e.printJSON(ev)
		} else {
			show(e.Out, ev)
		}
		if ev.Kind == agent.KindApprovalRequested && answers != nil {
			if code := ask(ctx, e, answers, ev); code != ExitOK {
				return code
			}
		}
		if ev.Kind == agent.KindTurnStarted {
			prompted = true
		}
		if ev.Kind == agent.KindTurnCompleted && o.UntilTurnEnd && prompted {
			return turnCode(ev)
		}
	}
	return ExitOK
}

func turnCode(ev agent.Event) int {
	if ev.Turn.Status == agent.TurnFailed {
		return ExitFailed
	}
	return ExitOK
}

// ask puts an approval to the person at the terminal.
func ask(ctx context.Context, e Env, in *bufio.Reader, ev agent.Event) int {
	a := ev.Approval
	fmt.Fprintf(e.Out, "? Allow %s [y/N] ", a.Title)
	line, err := in.ReadString('\n')
	if err != nil && line == "" {
		return e.fail(fmt.Errorf("no answer for %s: %w", a.ID, err))
	}
	answer := client.Answer{Decision: agent.Deny, Reason: "denied at the terminal"}
	if strings.EqualFold(strings.TrimSpace(line), "y") {
		answer = client.Answer{Decision: agent.Allow}
	}
	if _, err := e.Client.Resolve(ctx, ev.SessionID, a.ID, answer); err != nil {
		fmt.Fprintln(e.Err, "tether:", err) // answered elsewhere first: that answer stands
	}
	return ExitOK
}

// show prints one event as a line for people; deltas and bookkeeping
// print nothing (the completed item says it all).
func show(w io.Writer, ev agent.Event) {
	switch ev.Kind {
	case agent.KindSessionStarted:
		fmt.Fprintf(w, "● session %s (%s)\n", ev.SessionID, ev.Session.Agent)
	case agent.KindItemCompleted:
		showItem(w, ev.Item)
	case agent.KindApprovalResolved:
		r := ev.Resolution
		fmt.Fprintf(w, "  %s%s\n", r.Decision, by(*r))
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

func showItem(w io.Writer, it *agent.Item) {
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

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
