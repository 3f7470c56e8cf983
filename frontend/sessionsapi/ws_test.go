package sessionsapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

type wsMessage struct {
	ID    uint64      `json:"id"`
	Event agent.Event `json:"event"`
}

// readWS reads a WebSocket event stream until its close, or until stop
// says so; it returns the messages and the close status (-1 when it
// stopped first).
func readWS(t *testing.T, url string, stop func(wsMessage) bool) ([]wsMessage, websocket.StatusCode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, strings.Replace(url, "http://", "ws://", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var got []wsMessage
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			if status := websocket.CloseStatus(err); status != -1 {
				return got, status
			}
			t.Fatalf("read after %d messages: %v", len(got), err)
		}
		var m wsMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("message %s: %v", data, err)
		}
		if err := m.Event.Validate(); err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
		if stop != nil && stop(m) {
			_ = c.Close(websocket.StatusNormalClosure, "")
			return got, -1
		}
	}
}

// The session's events over WebSocket: the same events as SSE, numbered
// by seq, resumable with ?after= (nothing lost, nothing twice), closed
// normally after session.ended; the runner-wide feed too.
func TestSessionsAPIWebSocketStreams(t *testing.T) {
	base := server(t)
	var info sessions.Info
	if code := call(t, "POST", base+"/v1/sessions", `{"agent":"claude","workspace_id":"w1","prompt":"hello"}`, &info); code != 201 {
		t.Fatalf("create: %d", code)
	}
	eventsURL := base + "/v1/sessions/" + info.ID + "/events"
	first, status := readWS(t, eventsURL, func(m wsMessage) bool { return m.Event.Kind == agent.KindApprovalRequested })
	if status != -1 {
		t.Fatalf("the stream closed (%d) before the approval", status)
	}
	asked := first[len(first)-1].Event
	url := fmt.Sprintf("%s/v1/sessions/%s/approvals/%s/resolve", base, info.ID, asked.Approval.ID)
	if code := call(t, "POST", url, `{"decision":"allow"}`, nil); code != 200 {
		t.Fatalf("resolve: %d", code)
	}
	until := func(k agent.Kind) {
		if _, status := readWS(t, eventsURL, func(m wsMessage) bool { return m.Event.Kind == k }); status != -1 {
			t.Fatalf("no %s", k)
		}
	}
	until(agent.KindTurnCompleted)
	if code := call(t, "DELETE", base+"/v1/sessions/"+info.ID, "", nil); code != 204 {
		t.Fatalf("close: %d", code)
	}
	// Resumed after the approval: every later event once, in order, then
	// a normal close.
	rest, status := readWS(t, fmt.Sprintf("%s?after=%d", eventsURL, first[len(first)-1].ID), nil)
	if status != websocket.StatusNormalClosure {
		t.Fatalf("close status %d", status)
	}
	all := append(first, rest...)
	for i, m := range all {
		if m.ID != uint64(i+1) || m.Event.Seq != int64(i+1) {
			t.Fatalf("message %d has id %d seq %d", i, m.ID, m.Event.Seq)
		}
	}
	if last := all[len(all)-1].Event.Kind; last != agent.KindSessionEnded {
		t.Fatalf("last event %s", last)
	}
	// The feed carries the same events, numbered by position.
	feed, _ := readWS(t, base+"/v1/events", func(m wsMessage) bool { return m.Event.Kind == agent.KindSessionEnded })
	if len(feed) != len(all) || feed[0].ID != 1 || feed[len(feed)-1].Event.Seq != int64(len(all)) {
		t.Fatalf("feed of %d events, session of %d", len(feed), len(all))
	}
	// A bad position is refused before the upgrade.
	_, _, err := websocket.Dial(context.Background(), strings.Replace(eventsURL, "http://", "ws://", 1)+"?after=x", nil)
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("bad after: %v", err)
	}
}
