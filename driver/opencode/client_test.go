package opencode

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	oc "github.com/tetherhq/tether/protocol/opencode"
)

// The client's calls keep no connection open once answered: an idle
// session holds none of them.
func TestClientKeepsNoConnection(t *testing.T) {
	var (
		mu     sync.Mutex
		opened int
		closed = make(chan struct{}, 8)
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"healthy":true}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			mu.Lock()
			opened++
			mu.Unlock()
		case http.StateClosed:
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	c := newClient(srv.URL, "pw", nil)
	defer c.close()
	for range 2 {
		if _, err := c.health(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of 2 connections closed after their call", i)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if opened != 2 {
		t.Errorf("%d connections for 2 calls, want one each", opened)
	}
}

// The event stream is read on its caller's goroutine, with no transport's
// goroutines beside it, and its context's end ends a blocked read.
func TestEventStreamOwnConnection(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != oc.PathEvent || r.Header.Get("Accept") != "text/event-stream" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		if _, pw, _ := r.BasicAuth(); pw != "pw" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, "data: {\"type\":%q,\"properties\":{}}\n\n", oc.EventServerConnected)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := newClient(srv.URL, "pw", nil)
	defer c.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := connLoops()
	body, err := c.events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	events := oc.NewEventReader(body, 0)
	ev, err := events.Next()
	if err != nil || ev.Type != oc.EventServerConnected {
		t.Fatalf("Next = %+v, %v; want server.connected", ev, err)
	}
	if after := connLoops(); after > before {
		t.Errorf("the stream added %d transport connection goroutines", after-before)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := events.Next()
		ended <- err
	}()
	time.Sleep(20 * time.Millisecond) // blocked in the read
	cancel()
	select {
	case err := <-ended:
		if err == nil {
			t.Error("Next after the context's end returned an event")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the context's end did not end the read")
	}
	if _, err := (&client{base: srv.URL, password: "wrong", hc: c.hc, tr: c.tr}).events(context.Background()); err == nil {
		t.Error("a refused stream opened")
	}
}

// connLoops counts the goroutines of http.Transport connections (other
// tests' may be ending meanwhile: only more of them tells).
func connLoops() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "net/http.(*persistConn).")
}

// A driver's clients share its transport; a client without one has its
// own, which keeps no connection either.
func TestClientTransport(t *testing.T) {
	shared := newTransport()
	a, b := newClient("http://127.0.0.1:1", "pw", shared), newClient("http://127.0.0.1:2", "pw", shared)
	if a.tr != shared || b.tr != shared || a.hc.Transport != shared {
		t.Error("the clients do not call through the driver's transport")
	}
	own := newClient("http://127.0.0.1:3", "pw", nil)
	if own.tr == nil || own.tr == shared || !own.tr.DisableKeepAlives || own.tr.Proxy != nil {
		t.Errorf("a client's own transport: %+v", own.tr)
	}
}
