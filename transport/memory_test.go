package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/tetherhq/tether/protocol/ndjson"
)

var _ Transport = (*Memory)(nil)

func memPair(t *testing.T) (client, agent Conn) {
	t.Helper()
	m := NewMemory()
	client, err := m.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	agent = m.Agent()
	t.Cleanup(func() {
		_ = client.Close()
		_ = agent.Close()
	})
	return client, agent
}

// goRead starts a Read and returns where its outcome will arrive.
func goRead(conn Conn) <-chan error {
	done := make(chan error, 1)
	go func() {
		line, err := conn.Read(context.Background())
		if err == nil {
			err = fmt.Errorf("got line %q", line)
		}
		done <- err
	}()
	return done
}

func goWrite(conn Conn, line string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- conn.Write(context.Background(), []byte(line)) }()
	return done
}

func await(t *testing.T, what string, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(hangGuard):
		t.Fatalf("%s hung", what)
		return nil
	}
}

// stillBlocked checks that ch has no outcome yet. A true "blocked" cannot
// be observed; this only catches a call that returns when it must not.
func stillBlocked(t *testing.T, what string, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned (%v); it should block", what, err)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestMemoryBothDirections(t *testing.T) {
	t.Parallel()
	client, agent := memPair(t)
	ctx := guardCtx(t)
	done := goWrite(client, `{"to":"agent"}`)
	if line, err := agent.Read(ctx); err != nil || string(line) != `{"to":"agent"}` {
		t.Errorf("agent Read = %q, %v", line, err)
	}
	if err := await(t, "Write", done); err != nil {
		t.Error(err)
	}
	done = goWrite(agent, `{"to":"client"}`)
	if line, err := client.Read(ctx); err != nil || string(line) != `{"to":"client"}` {
		t.Errorf("client Read = %q, %v", line, err)
	}
	if err := await(t, "Write", done); err != nil {
		t.Error(err)
	}
}

// The reader owns what it reads: the writer may reuse its buffer.
func TestMemoryLinesAreCopied(t *testing.T) {
	t.Parallel()
	client, agent := memPair(t)
	buf := []byte("original")
	done := make(chan error, 1)
	go func() {
		done <- client.Write(context.Background(), buf)
		copy(buf, "CHANGED!")
	}()
	line, err := agent.Read(guardCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := await(t, "Write", done); err != nil {
		t.Fatal(err)
	}
	if string(line) != "original" {
		t.Errorf("line = %q after the writer reused its buffer", line)
	}
}

func TestMemoryCloseWrite(t *testing.T) {
	t.Parallel()
	client, agent := memPair(t)
	if err := client.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = client.CloseWrite() // idempotent
	if _, err := agent.Read(guardCtx(t)); err != io.EOF {
		t.Errorf("agent Read = %v, want io.EOF", err)
	}
	if err := client.Write(guardCtx(t), []byte("x")); err != ErrClosed {
		t.Errorf("Write after CloseWrite = %v, want ErrClosed", err)
	}
	// The other direction is still open.
	done := goWrite(agent, "reply")
	if line, err := client.Read(guardCtx(t)); err != nil || string(line) != "reply" {
		t.Errorf("client Read = %q, %v", line, err)
	}
	if err := await(t, "Write", done); err != nil {
		t.Error(err)
	}
}

// Close wakes blocked calls on both ends.
func TestMemoryCloseUnblocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		closeMe bool // close the end that blocks, or the other one
		read    bool
		want    error
	}{
		{"own Read", true, true, ErrClosed},
		{"peer Read", false, true, io.EOF},
		{"own Write", true, false, ErrClosed},
		{"peer Write", false, false, ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, agent := memPair(t)
			var done <-chan error
			if tc.read {
				done = goRead(client)
			} else {
				done = goWrite(client, "x")
			}
			stillBlocked(t, "call", done)
			if tc.closeMe {
				_ = client.Close()
			} else {
				_ = agent.Close()
			}
			if err := await(t, "call", done); err != tc.want {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// After Close, Read always says ErrClosed (never, at random, io.EOF).
func TestMemoryAfterClose(t *testing.T) {
	t.Parallel()
	for range 200 {
		client, agent := memPair(t)
		if err := client.Close(); err != nil {
			t.Fatal(err)
		}
		if err := client.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
		if _, err := client.Read(context.Background()); err != ErrClosed {
			t.Fatalf("Read after Close = %v, want ErrClosed", err)
		}
		if err := client.Write(context.Background(), []byte("x")); err != ErrClosed {
			t.Fatalf("Write after Close = %v, want ErrClosed", err)
		}
		if _, err := agent.Read(context.Background()); err != io.EOF {
			t.Fatalf("peer Read after Close = %v, want io.EOF", err)
		}
		if err := agent.Write(context.Background(), []byte("x")); err != ErrClosed {
			t.Fatalf("peer Write after Close = %v, want ErrClosed", err)
		}
	}
}

func TestMemorySecondConnectFails(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Connect(ctx); err != context.Canceled {
		t.Errorf("Connect with a done ctx = %v", err)
	}
	conn, err := m.Connect(context.Background())
	if err != nil {
		t.Fatalf("first Connect: %v", err)
	}
	defer conn.Close()
	if _, err := m.Connect(context.Background()); err == nil {
		t.Error("second Connect succeeded")
	}
}

func TestMemoryZeroValue(t *testing.T) {
	t.Parallel()
	var m Memory
	agent := m.Agent()
	client, err := m.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	defer agent.Close()
	done := goWrite(agent, "hi")
	if line, err := client.Read(guardCtx(t)); err != nil || string(line) != "hi" {
		t.Errorf("Read = %q, %v", line, err)
	}
	if err := await(t, "Write", done); err != nil {
		t.Error(err)
	}
}

// A Write is not done until the peer has read the line.
func TestMemoryBackpressure(t *testing.T) {
	t.Parallel()
	client, agent := memPair(t)
	done := goWrite(client, "one")
	stillBlocked(t, "Write with no reader", done)
	if line, err := agent.Read(guardCtx(t)); err != nil || string(line) != "one" {
		t.Fatalf("Read = %q, %v", line, err)
	}
	if err := await(t, "Write", done); err != nil {
		t.Error(err)
	}
}

func TestMemoryContext(t *testing.T) {
	t.Parallel()
	client, _ := memPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	read := make(chan error, 1)
	go func() { _, err := client.Read(ctx); read <- err }()
	write := make(chan error, 1)
	go func() { write <- client.Write(ctx, []byte("x")) }()
	cancel()
	if err := await(t, "Read", read); err != context.Canceled {
		t.Errorf("Read = %v, want context.Canceled", err)
	}
	if err := await(t, "Write", write); err != context.Canceled {
		t.Errorf("Write = %v, want context.Canceled", err)
	}
}

func TestMemoryRejectsNewline(t *testing.T) {
	t.Parallel()
	client, _ := memPair(t)
	if err := client.Write(guardCtx(t), []byte("a\nb")); !errors.Is(err, ndjson.ErrNewlineInLine) {
		t.Errorf("Write = %v, want ndjson.ErrNewlineInLine", err)
	}
}
