package sessionscmd

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
)

// FleetStatus prints the fleet's runners: their state, agents, sessions
// and load, and how long ago each was last heard from.
func FleetStatus(ctx context.Context, e Env) int {
	list, err := e.Client.Runners(ctx)
	if err != nil {
		return e.fail(err)
	}
	if e.JSON {
		return e.printJSON(list)
	}
	tw := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUNNER\tSTATE\tSESSIONS\tLOAD\tAGENTS\tADDRESS\tHEARD")
	for _, r := range list {
		room := "-"
		if r.MaxSessions > 0 {
			room = fmt.Sprint(r.MaxSessions)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%s\t%.2f\t%s\t%s\t%s ago\n", r.Name, r.State, r.Sessions, room, r.Load,
			strings.Join(r.Agents, ","), r.Addr, age(e.now(), r.Heartbeat))
	}
	_ = tw.Flush()
	return ExitOK
}

// Drain stops new placements on runner (undo lets them in again).
func Drain(ctx context.Context, e Env, runner string, undo bool) int {
	if err := e.Client.Drain(ctx, runner, !undo); err != nil {
		return e.fail(err)
	}
	if undo {
		fmt.Fprintf(e.Out, "runner %s takes new sessions again\n", runner)
	} else {
		fmt.Fprintf(e.Out, "runner %s is draining: no new sessions go to it; its sessions go on\n", runner)
	}
	return ExitOK
}
