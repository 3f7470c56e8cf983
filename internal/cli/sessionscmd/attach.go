package sessionscmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/internal/cli/eventview"
)

// AttachOptions say how to follow a session.
type AttachOptions struct {
	SessionID string
	// Prompt, if set, starts a turn once attached; Images go with it.
	Prompt string
	Images []agent.Image
	// In answers the session's approvals (y to allow, anything else
	// denies) when set: a terminal. Nil only watches; someone else
	// answers.
	In io.Reader
	// After is the last seq already seen (0: the whole session).
	After uint64
	// UntilTurnEnd returns after the next turn ends instead of the
	// session's end.
	UntilTurnEnd bool
	// Decide, when set, answers every approval with it (off a terminal:
	// tether run --approve); it wins over In.
	Decide agent.Decision
}

// Attach follows a session live: its text, commands, tool calls and
// approvals, one line each, until it ends.
func Attach(ctx context.Context, e Env, o AttachOptions) int {
	if o.Prompt != "" {
		if err := e.Client.PromptImages(ctx, o.SessionID, o.Prompt, o.Images...); err != nil {
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
			_ = json.NewEncoder(e.Out).Encode(ev) // one event a line
		} else {
			eventview.Compact(e.Out, ev)
		}
		switch {
		case ev.Kind != agent.KindApprovalRequested:
		case o.Decide != "":
			answer := client.Answer{Decision: o.Decide}
			if o.Decide == agent.Deny {
				answer.Reason = "denied by --approve=deny"
			}
			if _, err := e.Client.Resolve(ctx, ev.SessionID, ev.Approval.ID, answer); err != nil {
				fmt.Fprintln(e.Err, "tether:", err) // answered elsewhere first: that answer stands
			}
		case answers != nil:
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
