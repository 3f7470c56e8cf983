// Package sessionscmd owns what tether's commands against a runner's
// sessions API do and print: list sessions and pending approvals, answer
// an approval, and follow a session live (attach), answering its
// approvals on a terminal. cmd/tether parses their flags and calls here.
package sessionscmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
	"github.com/tetherhq/tether/internal/cli/eventview"
)

// Exit statuses, as tether run's.
const (
	ExitOK     = 0
	ExitFailed = 1
)

// Env is what a command runs with.
type Env struct {
	Client *client.Client
	Out    io.Writer
	Err    io.Writer
	// JSON prints machine-readable output (one JSON value) instead of a
	// table.
	JSON bool
	Now  func() time.Time
}

func (e Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// fail says why a command failed, in one line, and returns ExitFailed.
func (e Env) fail(err error) int {
	fmt.Fprintln(e.Err, "tether:", err)
	return ExitFailed
}

// Sessions lists the runner's sessions.
func Sessions(ctx context.Context, e Env) int {
	list, err := e.Client.Sessions(ctx)
	if err != nil {
		return e.fail(err)
	}
	if e.JSON {
		return e.printJSON(list)
	}
	// A fleet's sessions name their runner; a lone runner's do not.
	fleet := slices.ContainsFunc(list, func(s client.Session) bool { return s.Runner != "" })
	tw := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
	header := "SESSION\tAGENT\tWORKSPACE\tSTATE\tEVENTS\tSTARTED"
	if fleet {
		header += "\tRUNNER"
	}
	fmt.Fprintln(tw, header)
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s ago", s.ID, s.Agent, s.WorkspaceID, s.State, s.LastSeq, age(e.now(), s.Created))
		if fleet {
			fmt.Fprintf(tw, "\t%s", s.Runner)
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	return ExitOK
}

// Approvals lists the approvals waiting for an answer, across sessions.
func Approvals(ctx context.Context, e Env) int {
	list, err := e.Client.Approvals(ctx)
	if err != nil {
		return e.fail(err)
	}
	if e.JSON {
		return e.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(e.Out, "no approval is waiting")
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tAPPROVAL\tAGENT\tWAITING\tEXPIRES\tASKS")
	for _, a := range list {
		expires := "never"
		if !a.Expires.IsZero() {
			expires = "in " + age(a.Expires, e.now()) + " (then " + string(orDeny(a.Default)) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.SessionID, a.ID, a.Agent, age(e.now(), a.Created), expires, a.Title)
	}
	_ = tw.Flush()
	return ExitOK
}

func orDeny(d agent.Decision) agent.Decision {
	if d == "" {
		return agent.Deny
	}
	return d
}

// Resolve answers one approval and says what was decided; if another
// answer came first it says which, and fails.
func Resolve(ctx context.Context, e Env, sessionID, approvalID string, a client.Answer) int {
	r, err := e.Client.Resolve(ctx, sessionID, approvalID, a)
	var already *agent.AlreadyResolvedError
	switch {
	case errors.As(err, &already):
		return e.fail(fmt.Errorf("approval %s was already answered: %s%s", approvalID, already.First.Decision, eventview.By(already.First)))
	case err != nil:
		return e.fail(err)
	}
	if e.JSON {
		return e.printJSON(r)
	}
	fmt.Fprintf(e.Out, "%s %s\n", map[agent.Decision]string{agent.Allow: "allowed", agent.Deny: "denied"}[r.Decision], approvalID)
	return ExitOK
}

func (e Env) printJSON(v any) int {
	enc := json.NewEncoder(e.Out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return e.fail(err)
	}
	return ExitOK
}

// age is how long from then to now, rounded for people.
func age(now, then time.Time) string {
	d := now.Sub(then)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}
