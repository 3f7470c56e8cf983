package claudecli

import (
	"context"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
)

// The CLI's reader waits for room; everyone else appends at once; the
// reader of Events gets everything in order, then the end.
func TestOutboxBackpressureAndOrder(t *testing.T) {
	o := newOutbox(2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := func(id string) agent.Event { return agent.Event{Kind: agent.KindTurnStarted, TurnID: id} }
	o.add(ev("1"), ev("2"))
	gone, give := context.WithCancel(ctx)
	give()
	if o.waitRoom(gone) {
		t.Fatal("the reader did not wait at high water")
	}
	waited := make(chan bool)
	go func() { waited <- o.waitRoom(ctx) }()
	o.add(ev("3")) // an approval or a prompt: never waits
	if e, ok, err := o.take(ctx); !ok || err != nil || e.TurnID != "1" {
		t.Fatalf("take = %+v %v %v", e, ok, err)
	}
	if e, _, _ := o.take(ctx); e.TurnID != "2" {
		t.Fatalf("second = %+v", e)
	}
	if !<-waited {
		t.Fatal("waitRoom gave up")
	}
	o.close()
	var rest []string
	for e, err := range o.events(ctx) {
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
	if o.waitRoom(short) != true { // empty: room at once, even with ctx done
		t.Fatal("waitRoom refused with room")
	}
	o2 := newOutbox(1)
	if _, _, err := o2.take(short); err == nil {
		t.Fatal("take on an empty box ignored its context")
	}
}
