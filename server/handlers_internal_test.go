package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// At shutdown the streams of sessions' events get to finish on their own
// (they end after the session's end) before the rest is cancelled; other
// requests are not waited for.
func TestShutdownWaitsForSessionStreams(t *testing.T) {
	for path, stream := range map[string]bool{
		"/v1/sessions/ses_1/events": true, "/v1/events": false, "/v1/sessions/ses_1": false,
		"/v1/sessions//events": false, "/v1/sessions/ses_1/events/x": false,
	} {
		if got := sessionStream(httptest.NewRequest(http.MethodGet, path, nil)); got != stream {
			t.Errorf("%s: a session's stream %v, want %v", path, got, stream)
		}
	}
	var h handlers
	release, feedRelease := make(chan struct{}), make(chan struct{})
	started := make(chan struct{}, 2)
	served := make(chan struct{}, 2)
	handler := h.track(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		if r.URL.Path == "/v1/events" {
			<-feedRelease
		} else {
			<-release
		}
	}))
	for _, path := range []string{"/v1/sessions/ses_1/events", "/v1/events"} {
		go func() {
			handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
			served <- struct{}{}
		}()
		<-started
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	h.waitStreams(ctx)
	cancel()
	if ctx.Err() == nil {
		t.Fatal("waitStreams returned while a session's stream ran")
	}
	close(release)
	<-served
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h.waitStreams(ctx) // the feed still runs: not waited for
	if ctx.Err() != nil {
		t.Fatal("waitStreams waited for the runner-wide feed")
	}
	close(feedRelease)
	<-served
	h.wait()
}
