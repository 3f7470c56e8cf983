package sessionscmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
)

// RunOptions are one turn of any agent on a runner: tether run --agent
// NAME --runner URL.
type RunOptions struct {
	Create client.CreateRequest
	Prompt string
	// Images go with the prompt.
	Images []agent.Image
	Attach AttachOptions
	// Interrupts delivers Ctrl-C and SIGTERM: the first interrupts the
	// turn (the run still prints it to its end), a second stops waiting.
	Interrupts <-chan os.Signal
}

// Run starts a session on the runner, runs one turn in it as Attach
// shows it, and closes the session; it says how to resume it.
func Run(ctx context.Context, e Env, o RunOptions) int {
	if len(o.Images) > 0 { // refused before a session starts
		agents, err := e.Client.Agents(ctx)
		if err != nil {
			return e.fail(err)
		}
		if caps, ok := agents[o.Create.Agent]; ok {
			if err := agent.CheckImages(o.Create.Agent, caps, agent.Prompt{Images: o.Images}); err != nil {
				return e.fail(err)
			}
		}
	}
	s, err := e.Client.Create(ctx, o.Create)
	if err != nil {
		return e.fail(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		onInterrupts(ctx, e, s.ID, o.Interrupts, cancel)
	}()
	o.Attach.SessionID, o.Attach.Prompt, o.Attach.Images, o.Attach.UntilTurnEnd = s.ID, o.Prompt, o.Images, true
	code := Attach(ctx, e, o.Attach)
	cancel()
	<-stopped
	closeCtx, closeCancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer closeCancel()
	if err := e.Client.Close(closeCtx, s.ID); err != nil && !errors.Is(err, agent.ErrSessionEnded) {
		fmt.Fprintln(e.Err, "tether: closing the session:", err)
	}
	if got, err := e.Client.Get(closeCtx, s.ID); err == nil && got.NativeID != "" {
		fmt.Fprintf(e.Err, "session %s (%s %s; resume with --resume %s)\n", s.ID, got.Agent, got.NativeID, got.NativeID)
	}
	return code
}

// onInterrupts interrupts the session's turn at the first signal and
// cancels the run at the second.
func onInterrupts(ctx context.Context, e Env, id string, sigs <-chan os.Signal, cancel context.CancelFunc) {
	interrupted := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-sigs:
			if interrupted {
				cancel()
				return
			}
			interrupted = true
			if err := e.Client.Interrupt(ctx, id); err != nil {
				fmt.Fprintln(e.Err, "tether: interrupt:", err)
			}
		}
	}
}
