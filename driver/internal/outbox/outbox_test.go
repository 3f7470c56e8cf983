package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/internal/outbox"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The agent's reader waits for room; everyone else appends at once; the
// reader of Events gets everything in order, then the end.
func TestBackpressureAndOrder(t *testing.T) {
	o := outbox.New(2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := func(id string) agent.Event { return agent.Event{Kind: agent.KindTurnStarted, TurnID: id} }
	o.Add(ev("1"), ev("2"))
	gone, give := context.WithCancel(ctx)
	give()
	if o.WaitRoom(gone) == nil {
		t.Fatal("the reader did not wait at high water")
	}
	waited := make(chan error)
	go func() { waited <- o.WaitRoom(ctx) }()
	o.Add(ev("3")) // an approval or a prompt: never waits
	if q := o.Queued(); len(q) != 3 {
		t.Fatalf("queued %d", len(q))
	}
	if e, ok, err := o.Take(ctx); !ok || err != nil || e.TurnID != "1" {
		t.Fatalf("take = %+v %v %v", e, ok, err)
	}
	if e, _, _ := o.Take(ctx); e.TurnID != "2" {
		t.Fatalf("second = %+v", e)
	}
	if err := <-waited; err != nil {
		t.Fatalf("WaitRoom gave up: %v", err)
	}
	o.Close()
	var rest []string
	for e, err := range o.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, e.TurnID)
	}
	if len(rest) != 1 || rest[0] != "3" {
		t.Fatalf("after close: %v", rest)
	}
	short, stop := context.WithCancel(ctx)
	stop()
	if err := o.WaitRoom(short); err != nil { // empty: room at once, even with ctx done
		t.Fatalf("WaitRoom refused with room: %v", err)
	}
	o2 := outbox.New(1)
	if _, _, err := o2.Take(short); err == nil {
		t.Fatal("take on an empty box ignored its context")
	}
}

// A writer waiting for room goes on when the box closes: nobody will
// read, and the writer must not hang.
func TestCloseReleasesAWaitingWriter(t *testing.T) {
	o := outbox.New(1)
	o.Add(agent.Event{Kind: agent.KindTurnStarted})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waited := make(chan error)
	go func() { waited <- o.WaitRoom(ctx) }()
	o.Close()
	if err := <-waited; err != nil {
		t.Fatalf("WaitRoom after Close: %v", err)
	}
}

// A reader of Events that takes queued events in batches still gets every
// event once, in order, while the writer waits at high water.
func TestEventsInOrderUnderLoad(t *testing.T) {
	o := outbox.New(8)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = 20000
	done := make(chan error, 1)
	go func() {
		for i := range n {
			if err := o.WaitRoom(ctx); err != nil {
				done <- err
				return
			}
			if q := len(o.Queued()); q > 8 {
				done <- fmt.Errorf("%d queued past high water", q)
				return
			}
			o.Add(agent.Event{Kind: agent.KindUsage, Seq: int64(i)})
		}
		o.Close()
		done <- nil
	}()
	next := int64(0)
	for e, err := range o.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq != next {
			t.Fatalf("event %d, want %d", e.Seq, next)
		}
		next++
	}
	if err := <-done; err != nil || next != n {
		t.Fatalf("writer: %v; read %d of %d", err, next, n)
	}
}
