package protov1

import (
	"context"
	"net"
	"testing"
	"time"
)

// writesConn records each write that reaches the network.
type writesConn struct {
	net.Conn
	writes   []string
	deadline time.Time
}

func (w *writesConn) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func (w *writesConn) SetWriteDeadline(t time.Time) error {
	w.deadline = t
	return nil
}

// What is written while gathering leaves with the next write made without
// it, in one write and in order; release sends what no write took.
func TestGatherConn(t *testing.T) {
	wire := &writesConn{}
	g := &gatherConn{Conn: wire}
	write := func(s string) {
		t.Helper()
		if n, err := g.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	write("a")
	g.gather(true)
	write("b")
	write("c")
	g.gather(false)
	write("d")
	g.gather(true)
	write("e")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.release(ctx); err != nil {
		t.Fatal(err)
	}
	write("f")
	want := []string{"a", "bcd", "e", "f"}
	if len(wire.writes) != len(want) {
		t.Fatalf("writes %q, want %q", wire.writes, want)
	}
	for i := range want {
		if wire.writes[i] != want[i] {
			t.Fatalf("writes %q, want %q", wire.writes, want)
		}
	}
	if !wire.deadline.IsZero() {
		t.Fatal("release left a write deadline behind")
	}
	if err := (*gatherConn)(nil).release(ctx); err != nil {
		t.Fatal(err)
	}
}
