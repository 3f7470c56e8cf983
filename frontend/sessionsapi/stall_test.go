package sessionsapi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/frontend/sessionsapi"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/internal/testing/testenv"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

// An SSE reader that stops reading is dropped, as a WebSocket one that
// stops answering pings is, while one that keeps reading under the same
// flood of events stays.
func TestSSEReaderThatStopsReadingIsDropped(t *testing.T) {
	const heartbeat = 100 * time.Millisecond
	m := runnertest.Manager(t, map[string]agent.Driver{"mock": mock.New(mock.Config{})}, eventlog.Options{})
	var logged testenv.SyncBuffer
	srv := httptest.NewUnstartedServer(sessionsapi.Handler(sessionsapi.Config{Sessions: m, Heartbeat: heartbeat,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))}))
	srv.Config.ConnContext = sessionsapi.ConnContext
	srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A small receive buffer, so a reader that does not read soon leaves
	// the runner's side of the connection with a queue.
	dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	open := func() net.Conn {
		c, err := dialer.DialContext(ctx, "tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	stalled, reading := open(), open()
	defer stalled.Close()
	defer reading.Close()
	var read sync.WaitGroup
	read.Add(1)
	readErr := make(chan error, 1)
	go func() {
		defer read.Done()
		_, err := io.Copy(io.Discard, reading)
		readErr <- err
	}()
	defer func() { reading.Close(); read.Wait() }()

	flood(ctx, t, m, func() bool { return strings.Contains(logged.String(), "its reader stopped reading") })
	if ctx.Err() != nil {
		t.Fatalf("the reader that stopped reading was never dropped; log:\n%s", logged.String())
	}
	// The dropped reader finds the end once it reads what was queued; the
	// other is still open.
	_ = stalled.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, stalled); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the dropped stream did not end: %v", err)
	}
	select {
	case err := <-readErr:
		t.Fatalf("the reader that kept reading was dropped too: %v\n%s", err, logged.String())
	default:
	}
	if n := strings.Count(logged.String(), "its reader stopped reading"); n != 1 {
		t.Fatalf("%d streams dropped:\n%s", n, logged.String())
	}
}

// flood runs mock turns in a few sessions until done says so or ctx ends.
func flood(ctx context.Context, t *testing.T, m *sessions.Manager, done func() bool) {
	t.Helper()
	var ids []string
	for _, ws := range []string{"a", "b"} {
		info, err := m.Create(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: ws})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	prompt := "flood " + strings.Repeat("x", 2000)
	for !done() && ctx.Err() == nil {
		for _, id := range ids {
			if err := m.Prompt(ctx, id, agent.Prompt{Text: prompt}); err != nil && !errors.Is(err, agent.ErrTurnInProgress) {
				t.Fatal(err)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}
