package remote

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Messages of every size come back whole through one reused buffer; a
// large buffer is let go after a small message, and the next large
// message gets its size at once instead of doubling up to it again.
func TestMessageReaderSizes(t *testing.T) {
	sizes := []int{10, 300 << 10, 100, 290 << 10, 20 << 10, 5 << 10, 2 << 20, 10, 40 << 10}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		for i, n := range sizes {
			if err := ws.Write(ctx, websocket.MessageText, message(i, n)); err != nil {
				return
			}
		}
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(-1)

	var m messageReader
	firstLarge := 0
	for i, n := range sizes {
		got, err := m.read(ctx, ws)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !bytes.Equal(got, message(i, n)) {
			t.Fatalf("message %d: got %d bytes, not the %d sent", i, len(got), n)
		}
		switch {
		case n < keepMessageBuf/4 && cap(m.buf) > keepMessageBuf:
			t.Errorf("message %d (%d B): kept a %d-byte buffer", i, n, cap(m.buf))
		case i == 1:
			firstLarge = cap(m.buf)
		case i == 3 && cap(m.buf) != firstLarge:
			// 290 KiB after a small message: the 300 KiB one's buffer.
			t.Errorf("message %d: buffer of %d bytes, want %d", i, cap(m.buf), firstLarge)
		case i == 8 && cap(m.buf) != maxJump:
			// After a 2 MiB message the jump stops at maxJump.
			t.Errorf("message %d: buffer of %d bytes, want %d", i, cap(m.buf), maxJump)
		}
	}
	if _, err := m.read(ctx, ws); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after the last message: %v, want the close", err)
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

// A full buffer doubles while the message is small; once it is large, it
// jumps to the last large buffer's size, at most maxJump.
func TestMessageReaderGrowth(t *testing.T) {
	for _, tc := range []struct {
		lastLarge, capacity, want int
	}{
		{0, 0, minMessageBuf},
		{0, 4 << 10, 4 << 10},
		{0, 16 << 10, 16 << 10},
		{512 << 10, 4 << 10, 4 << 10},
		{512 << 10, 16 << 10, 512<<10 - 16<<10},
		{512 << 10, 512 << 10, 512 << 10},
		{8 << 20, 16 << 10, maxJump - 16<<10},
		{8 << 20, maxJump, maxJump},
	} {
		m := messageReader{lastLarge: tc.lastLarge}
		if got := m.growth(tc.capacity); got != tc.want {
			t.Errorf("last large %d, capacity %d: growth %d, want %d", tc.lastLarge, tc.capacity, got, tc.want)
		}
	}
}
