package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/client"
)

// turnsResult is the latency of a turn's events as they really come: in
// a burst, after an idle moment.
type turnsResult struct {
	turns, events int
	all           [3]time.Duration // p50, p99, max of every event
	started       [2]time.Duration // p50, p99 of turn.started alone
}

// turns prompts the mock n times, each after the last turn's end and an
// idle pause; an event's latency is its arrival at the client less its
// own time (the moment the driver made it).
func turns(c *client.Client, n int, idle time.Duration) (turnsResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, err := c.Create(ctx, client.CreateRequest{Agent: "mock", WorkspaceID: "turns"})
	if err != nil {
		return turnsResult{}, err
	}
	defer c.Close(context.WithoutCancel(ctx), s.ID)
	type arrival struct {
		e  agent.Event
		at time.Time
	}
	arrived := make(chan arrival, 4096)
	streamCtx, stopStream := context.WithCancel(ctx)
	defer stopStream()
	go func() {
		defer close(arrived)
		for e, err := range c.Events(streamCtx, s.ID, 0, 0) {
			if err != nil {
				return
			}
			select {
			case arrived <- arrival{e, time.Now()}:
			case <-streamCtx.Done():
				return
			}
		}
	}()
	var all, started []time.Duration
	prompted := false
	res := turnsResult{turns: n}
	for i := 0; i < n; {
		if !prompted {
			time.Sleep(idle)
			if err := c.Prompt(ctx, s.ID, "hello"); err != nil {
				return res, err
			}
			prompted = true
		}
		a, open := <-arrived
		if !open {
			return res, fmt.Errorf("the event stream ended after %d turns", i)
		}
		if a.e.TurnID == "" {
			continue // the session's own events
		}
		lat := a.at.Sub(a.e.Time)
		all = append(all, lat)
		switch a.e.Kind {
		case agent.KindTurnStarted:
			started = append(started, lat)
		case agent.KindTurnCompleted:
			i++
			prompted = false
		}
	}
	res.events = len(all)
	slices.Sort(all)
	slices.Sort(started)
	at := func(xs []time.Duration, q float64) time.Duration { return xs[min(len(xs)-1, int(q*float64(len(xs))))] }
	res.all = [3]time.Duration{at(all, 0.5), at(all, 0.99), all[len(all)-1]}
	res.started = [2]time.Duration{at(started, 0.5), at(started, 0.99)}
	return res, nil
}
