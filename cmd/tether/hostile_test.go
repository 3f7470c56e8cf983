package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A token holder's cursor, however large, gets a 400 over SSE and
// WebSocket alike: it reaches no unchecked conversion, and the runner and
// its sessions go on (a cursor of 2^63 used to panic on a stream's
// goroutine and end the process).
func TestServeSurvivesHostileCursors(t *testing.T) {
	p := startServe(t, cleanEnv(), "--cli", mockCLI(t, "text", 0))
	base := "http://" + p.addr
	code, body := httpDo(t, "POST", base+"/v1/sessions", testToken, `{"agent":"mock","workspace_id":"hostile","prompt":"hello"}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var info struct{ ID string }
	_ = json.Unmarshal([]byte(body), &info)
	idle := func() {
		t.Helper()
		for deadline := time.Now().Add(waitLimit); ; time.Sleep(20 * time.Millisecond) {
			_, body := httpDo(t, "GET", base+"/v1/sessions/"+info.ID, testToken, "")
			if strings.Contains(body, `"state":"idle"`) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the session never went idle: %s\n%s", body, p.log())
			}
		}
	}
	idle()

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for _, tc := range []struct{ path, lastEventID string }{
		{"/v1/events?after=9223372036854775808", ""},
		{"/v1/events", "18446744073709551614"},
		{"/v1/events?after=18446744073709551615", ""},
		{"/v1/sessions/" + info.ID + "/events?after=9223372036854775808", ""},
		{"/v1/sessions/" + info.ID + "/events", "18446744073709551615"},
	} {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		if tc.lastEventID != "" {
			req.Header.Set("Last-Event-ID", tc.lastEventID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", tc.path, err, p.log())
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("GET %s (Last-Event-ID %q): %d", tc.path, tc.lastEventID, resp.StatusCode)
		}
		_, resp, err = websocket.Dial(ctx, "ws://"+p.addr+tc.path, &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}, "Last-Event-ID": {tc.lastEventID}}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("WebSocket %s: %v %v", tc.path, resp, err)
		}
	}
	// Still alive, the session with it.
	if code, body := httpDo(t, "POST", base+"/v1/sessions/"+info.ID+"/prompt", testToken, `{"text":"again"}`); code != http.StatusAccepted {
		t.Fatalf("prompt after the hostile cursors: %d %s\n%s", code, body, p.log())
	}
	idle()
	select {
	case <-p.exited:
		t.Fatalf("the runner exited:\n%s", p.log())
	default:
	}
}
