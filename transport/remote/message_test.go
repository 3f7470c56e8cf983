package remote

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// messageServer serves one WebSocket that sends sizes' messages in order,
// waiting before message i for a value on hold[i] when there is one.
func messageServer(t *testing.T, sizes []int, hold map[int]chan struct{}) *websocket.Conn {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		for i, n := range sizes {
			if ch := hold[i]; ch != nil {
				select {
				case <-ch:
				case <-ctx.Done():
					return
				}
			}
			if err := ws.Write(ctx, websocket.MessageText, message(i, n)); err != nil {
				return
			}
		}
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	ws.SetReadLimit(-1)
	return ws
}

// Messages of every size come back whole through one reused buffer. While
// messages keep coming, a large buffer stays for the next batch, small
// messages between them or not; a huge one goes with the next small
// message.
func TestMessageReaderSizes(t *testing.T) {
	sizes := []int{10, 300 << 10, 100, 290 << 10, 20 << 10, 5 << 10, 2 << 20, 10, 40 << 10}
	ws := messageServer(t, sizes, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var m messageReader
	defer m.close()
	var large int
	for i, n := range sizes {
		got, err := m.read(ctx, ws)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !bytes.Equal(got, message(i, n)) {
			t.Fatalf("message %d: got %d bytes, not the %d sent", i, len(got), n)
		}
		switch i {
		case 1:
			large = cap(m.buf)
		case 2, 3, 4, 5:
			if cap(m.buf) != large {
				t.Errorf("message %d (%d B): buffer of %d bytes, want the first large one's %d", i, n, cap(m.buf), large)
			}
		case 7:
			if cap(m.buf) > keepMessageBuf {
				t.Errorf("message %d (%d B) after a 2 MiB one: kept a %d-byte buffer", i, n, cap(m.buf))
			}
		}
	}
	if _, err := m.read(ctx, ws); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after the last message: %v, want the close", err)
	}
}

// A large buffer is let go while the connection waits longer than the
// idle time (TestMessageReaderSizes shows short waits keep it).
func TestMessageReaderDropsItsBufferWhenIdle(t *testing.T) {
	hold := map[int]chan struct{}{1: make(chan struct{})}
	sizes := []int{300 << 10, 100}
	ws := messageServer(t, sizes, hold)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := messageReader{idleAfter: time.Millisecond}
	defer m.close()
	if _, err := m.read(ctx, ws); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		got, err := m.read(ctx, ws)
		if err == nil && !bytes.Equal(got, message(1, sizes[1])) {
			err = errors.New("the message differs from the one sent")
		}
		done <- err
	}()
	// The read parks the buffer, then the idle timer drops it.
	for m.drops.Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the parked buffer was never dropped")
		case <-time.After(100 * time.Microsecond):
		}
	}
	close(hold[1])
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cap(m.buf) > keepMessageBuf {
		t.Errorf("after an idle wait: a %d-byte buffer", cap(m.buf))
	}
}

// message is the i-th test message, n bytes that differ from message to
// message.
func message(i, n int) []byte {
	b := bytes.Repeat([]byte{'a' + byte(i)}, n)
	if n > 0 {
		b[n-1] = '0' + byte(i)
	}
	return b
}
