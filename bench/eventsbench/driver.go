package main

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"time"

	"github.com/tetherhq/tether/agent"
)

// pacedDriver is a stand-in agent: a prompt "N NS" makes a turn of N text
// deltas, one every NS nanoseconds (0: as fast as they are taken), each
// stamped in its raw payload with when it was handed over.
type pacedDriver struct{}

func (pacedDriver) Name() string                     { return "paced" }
func (pacedDriver) Capabilities() agent.Capabilities { return agent.Capabilities{} }

func (pacedDriver) Start(context.Context, agent.StartRequest) (agent.Session, error) {
	s := &pacedSession{events: make(chan agent.Event, 1024), done: make(chan struct{})}
	s.events <- agent.Event{Kind: agent.KindSessionStarted, Time: time.Now(), Session: &agent.SessionInfo{Agent: "paced"}}
	return s, nil
}

type pacedSession struct {
	events chan agent.Event
	done   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

func (s *pacedSession) NativeID() string { return "paced" }

func (s *pacedSession) Events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for {
			select {
			case e := <-s.events:
				if !yield(e, nil) || e.Kind == agent.KindSessionEnded {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}
}

func (s *pacedSession) Prompt(_ context.Context, p agent.Prompt) error {
	var n int
	var pace int64
	if _, err := fmt.Sscan(p.Text, &n, &pace); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.turn(n, time.Duration(pace))
	return nil
}

func (s *pacedSession) send(e agent.Event) bool {
	select {
	case s.events <- e:
		return true
	case <-s.done:
		return false
	}
}

func (s *pacedSession) turn(n int, pace time.Duration) {
	defer s.wg.Done()
	const turn = "t1"
	if !s.send(agent.Event{Kind: agent.KindTurnStarted, TurnID: turn, Time: time.Now()}) {
		return
	}
	next := time.Now()
	for i := range n {
		if pace > 0 {
			next = next.Add(pace)
			time.Sleep(time.Until(next))
		}
		now := time.Now()
		raw, _ := json.Marshal(map[string]int64{"sent": now.UnixNano()})
		e := agent.Event{Kind: agent.KindItemDelta, TurnID: turn, Time: now, Raw: raw,
			Delta: &agent.Delta{ItemID: "m1", Field: agent.FieldText, Text: "chunk " + strconv.Itoa(i) + " of a streamed reply"}}
		if !s.send(e) {
			return
		}
	}
	s.send(agent.Event{Kind: agent.KindTurnCompleted, TurnID: turn, Time: time.Now(), Turn: &agent.TurnInfo{Status: agent.TurnCompleted}})
}

// sentAt reads the stamp a paced event carries.
func sentAt(e agent.Event) time.Time {
	var raw struct{ Sent int64 }
	_ = json.Unmarshal(e.Raw, &raw)
	return time.Unix(0, raw.Sent)
}

func (s *pacedSession) Steer(context.Context, agent.Prompt) error { return agent.ErrUnsupported }
func (s *pacedSession) Interrupt(context.Context) error           { return agent.ErrUnsupported }
func (s *pacedSession) Resolve(context.Context, agent.Resolution) error {
	return agent.ErrUnknownApproval
}
func (s *pacedSession) Messages(context.Context) ([]agent.Item, error)   { return nil, nil }
func (s *pacedSession) Diff(context.Context) ([]agent.FileChange, error) { return nil, nil }

func (s *pacedSession) Close() error {
	s.once.Do(func() {
		close(s.done)
		s.wg.Wait()
		s.events <- agent.Event{Kind: agent.KindSessionEnded, Time: time.Now(), Session: &agent.SessionInfo{Agent: "paced", Reason: "closed"}}
	})
	return nil
}
