package shimclient

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/agent"
)

// FloodDriver is an agent (name "flood") whose turn is N completed
// messages, one every Interval (zero: as fast as the reader takes them),
// each stamped with the time it is emitted, then a completed turn. A
// prompt "CRASH" ends the session at once, as an agent that dies does.
// It measures and tests the shim's stream, not an agent.
type FloodDriver struct {
	N        int
	Interval time.Duration
}

func (d *FloodDriver) Name() string                     { return "flood" }
func (d *FloodDriver) Capabilities() agent.Capabilities { return agent.Capabilities{Resume: true} }

func (d *FloodDriver) Start(_ context.Context, req agent.StartRequest) (agent.Session, error) {
	s := &floodSession{d: d, ch: make(chan agent.Event, 64), closed: make(chan struct{}), native: "flood-1"}
	if req.Resume != "" {
		s.native = req.Resume
	}
	s.ch <- agent.Event{Kind: agent.KindSessionStarted, Time: time.Now(), Session: &agent.SessionInfo{Agent: "flood", NativeID: s.native}}
	return s, nil
}

type floodSession struct {
	d      *FloodDriver
	native string
	ch     chan agent.Event
	mu     sync.Mutex
	turns  int
	once   sync.Once
	reason string        // set before closed closes
	closed chan struct{} // closed when the session ends
	wg     sync.WaitGroup
}

func (s *floodSession) NativeID() string { return s.native }

func (s *floodSession) Events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		for {
			select {
			case e := <-s.ch:
				if !yield(e, nil) {
					return
				}
			case <-s.closed:
				for { // what was sent before the end, then the end
					select {
					case e := <-s.ch:
						if !yield(e, nil) {
							return
						}
						continue
					default:
					}
					break
				}
				yield(agent.Event{Kind: agent.KindSessionEnded, Time: time.Now(), Session: &agent.SessionInfo{Agent: "flood", Reason: s.reason}}, nil)
				return
			case <-ctx.Done():
				yield(agent.Event{}, ctx.Err())
				return
			}
		}
	}
}

// send hands e to the reader unless the session closed.
func (s *floodSession) send(e agent.Event) bool {
	select {
	case s.ch <- e:
		return true
	case <-s.closed:
		return false
	}
}

func (s *floodSession) Prompt(_ context.Context, p agent.Prompt) error {
	s.mu.Lock()
	s.turns++
	turn := fmt.Sprintf("turn-%d", s.turns)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if strings.Contains(p.Text, "CRASH") {
			s.end("the agent exited")
			return
		}
		if !s.send(agent.Event{Kind: agent.KindTurnStarted, TurnID: turn, Time: time.Now()}) {
			return
		}
		var tick *time.Ticker
		if s.d.Interval > 0 {
			tick = time.NewTicker(s.d.Interval)
			defer tick.Stop()
		}
		for i := range s.d.N {
			if tick != nil {
				select {
				case <-tick.C:
				case <-s.closed:
					return
				}
			}
			id := fmt.Sprintf("%s/m%d", turn, i)
			if !s.send(agent.Event{Kind: agent.KindItemCompleted, TurnID: turn, Time: time.Now(),
				Item: &agent.Item{ID: id, Type: agent.ItemMessage, Status: agent.ItemDone, Text: fmt.Sprintf("message %d", i)}}) {
				return
			}
		}
		s.send(agent.Event{Kind: agent.KindTurnCompleted, TurnID: turn, Time: time.Now(),
			Turn: &agent.TurnInfo{Status: agent.TurnCompleted, Text: fmt.Sprintf("flooded %d", s.d.N)}})
	}()
	return nil
}

func (s *floodSession) end(reason string) {
	s.once.Do(func() {
		s.reason = reason
		close(s.closed)
	})
}

func (s *floodSession) Steer(context.Context, agent.Prompt) error {
	return &agent.UnsupportedError{Agent: "flood", Capability: "steer"}
}
func (s *floodSession) Interrupt(context.Context) error { return agent.ErrNoTurn }
func (s *floodSession) Resolve(context.Context, agent.Resolution) error {
	return agent.ErrUnknownApproval
}
func (s *floodSession) Messages(context.Context) ([]agent.Item, error) { return nil, nil }
func (s *floodSession) Diff(context.Context) ([]agent.FileChange, error) {
	return nil, &agent.UnsupportedError{Agent: "flood", Capability: "diff"}
}

// Close ends the session (its reader gets session.ended) and waits for
// the turn's goroutine.
func (s *floodSession) Close() error {
	s.end("closed")
	s.wg.Wait()
	return nil
}
