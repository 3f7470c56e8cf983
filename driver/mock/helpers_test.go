package mock

import (
	"context"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
)

const waitLimit = 10 * time.Second

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// stream is a session with its events read into a channel, each one
// validated as it comes.
type stream struct {
	t    *testing.T
	s    agent.Session
	dir  string
	ch   chan agent.Event
	done chan struct{}
	all  []agent.Event
}

func start(t *testing.T, d *Driver, req agent.StartRequest) *stream {
	t.Helper()
	if req.Workspace == "" {
		req.Workspace = t.TempDir()
	}
	s, err := d.Start(ctxFor(t), req)
	if err != nil {
		t.Fatal(err)
	}
	st := &stream{t: t, s: s, dir: req.Workspace, ch: make(chan agent.Event, 1024), done: make(chan struct{})}
	go func() {
		defer close(st.done)
		defer close(st.ch)
		for e, err := range s.Events(context.Background()) {
			if err != nil {
				return
			}
			st.ch <- e
		}
	}()
	t.Cleanup(func() { _ = s.Close(); <-st.done })
	return st
}

// next returns the next event, validated.
func (st *stream) next() (agent.Event, bool) {
	st.t.Helper()
	select {
	case e, ok := <-st.ch:
		if !ok {
			return e, false
		}
		if err := e.Validate(); err != nil {
			st.t.Fatalf("%v: %+v", err, e)
		}
		if len(e.Raw) == 0 {
			st.t.Errorf("%s has no raw payload", e.Kind)
		}
		st.all = append(st.all, e)
		return e, true
	case <-time.After(waitLimit):
		st.t.Fatal("no event within the limit")
		return agent.Event{}, false
	}
}

// until reads events up to the first that match says is wanted.
func (st *stream) until(match func(agent.Event) bool) agent.Event {
	st.t.Helper()
	for {
		e, ok := st.next()
		if !ok {
			st.t.Fatalf("events ended; got %s", kinds(st.all))
		}
		if match(e) {
			return e
		}
	}
}

func (st *stream) untilKind(k agent.Kind) agent.Event {
	st.t.Helper()
	return st.until(func(e agent.Event) bool { return e.Kind == k })
}

// rest reads to the end of the events.
func (st *stream) rest() {
	st.t.Helper()
	for {
		if _, ok := st.next(); !ok {
			return
		}
	}
}

func (st *stream) prompt(text string) {
	st.t.Helper()
	if err := st.s.Prompt(ctxFor(st.t), agent.Prompt{Text: text}); err != nil {
		st.t.Fatal(err)
	}
}

func itemOf(typ agent.ItemType, k agent.Kind) func(agent.Event) bool {
	return func(e agent.Event) bool { return e.Kind == k && e.Item.Type == typ }
}

func kinds(events []agent.Event) []string {
	var out []string
	for _, e := range events {
		s := string(e.Kind)
		if e.Item != nil {
			s += ":" + string(e.Item.Type)
		}
		out = append(out, s)
	}
	return out
}
