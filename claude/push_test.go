package claude_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
)

// With OnMessage, every message reaches the callback in order on the
// reader's goroutine, the end of the output comes as nil, and Receive
// says where the messages went instead of waiting for them.
func TestOnMessageGetsEveryMessageThenNil(t *testing.T) {
	mem, a := newPair(t)
	got := make(chan claude.Message, 8)
	c := connect(t, mem, a, claude.Options{OnMessage: func(m claude.Message) { got <- m }})
	for _, err := range c.Receive(context.Background()) {
		if !errors.Is(err, claude.ErrPushedMessages) {
			t.Fatalf("Receive yielded %v, want ErrPushedMessages", err)
		}
	}
	a.send(initLine)
	a.send(assistantLine)
	a.send(resultLine)
	var types []string
	for range 3 {
		select {
		case m := <-got:
			types = append(types, m.Type())
		case <-time.After(10 * time.Second):
			t.Fatalf("only %v arrived", types)
		}
	}
	if strings.Join(types, ",") != "system,assistant,result" {
		t.Fatalf("types = %v", types)
	}
	if c.SessionID() != "s-1" || c.Totals().Turns != 1 {
		t.Fatalf("pushed messages were not observed: session %q totals %+v", c.SessionID(), c.Totals())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != nil {
			t.Fatalf("after the end: %v, want nil", m.Type())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no nil at the end of the output")
	}
}

// DiscardServerInfo keeps nothing of the initialize answer; without it,
// ServerInfo has it.
func TestDiscardServerInfo(t *testing.T) {
	for _, discard := range []bool{false, true} {
		mem, a := newPair(t)
		c := connect(t, mem, a, claude.Options{DiscardServerInfo: discard})
		if got := len(c.ServerInfo().Models); got != map[bool]int{false: 1, true: 0}[discard] {
			t.Errorf("DiscardServerInfo %v: %d models", discard, got)
		}
		_ = c.Close()
	}
}
