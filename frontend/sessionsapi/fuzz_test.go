package sessionsapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/frontend/sessionsapi"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

// Every handler that takes a cursor (a session's events, the runner-wide
// feed; Last-Event-ID or ?after=) answers any cursor a client can send
// with a stream that starts after it, or a 400: never a panic, and never
// an event at or before the cursor.
func FuzzStreamCursor(f *testing.F) {
	for _, c := range []string{"", "0", "1", "5", "-1", "9223372036854775807", "9223372036854775808",
		"18446744073709551614", "18446744073709551615", "18446744073709551616", "1e3", " 1", "0x10", "+3"} {
		f.Add(c, "", false)
		f.Add("", c, true)
	}
	m := runnertest.Manager(f, map[string]agent.Driver{"mock": mock.New(mock.Config{})}, eventlog.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := m.Create(ctx, sessions.CreateRequest{Agent: "mock", WorkspaceID: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	if err := m.Prompt(ctx, info.ID, agent.Prompt{Text: "hello"}); err != nil {
		f.Fatal(err)
	}
	for got, err := range m.Events(ctx, info.ID, 0) {
		if err != nil {
			f.Fatal(err)
		}
		if got.Kind == agent.KindTurnCompleted {
			break
		}
	}
	h := sessionsapi.Handler(sessionsapi.Config{Sessions: m, Heartbeat: time.Hour})
	f.Fuzz(func(t *testing.T, lastEventID, after string, feed bool) {
		path := "/v1/sessions/" + info.ID + "/events"
		if feed {
			path = "/v1/events"
		}
		if after != "" {
			path += "?after=" + url.QueryEscape(after)
		}
		rctx, stop := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer stop()
		req := httptest.NewRequestWithContext(rctx, "GET", path, nil)
		if lastEventID != "" && !strings.ContainsAny(lastEventID, "\r\n\x00") {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusBadRequest:
			var body struct{ Error struct{ Code string } }
			if json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error.Code == "" {
				t.Fatalf("400 without its error: %q", rec.Body.String())
			}
		case http.StatusOK:
			cursor := req.Header.Get("Last-Event-ID")
			if cursor == "" {
				cursor = req.URL.Query().Get("after")
			}
			from, _ := strconv.ParseUint(cursor, 10, 64)
			sc := bufio.NewScanner(rec.Body)
			for sc.Scan() {
				if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
					n, err := strconv.ParseUint(id, 10, 64)
					if err != nil || n <= from {
						t.Fatalf("cursor %q: event %s after %d", cursor, id, from)
					}
					from = n
				}
			}
		default:
			t.Fatalf("cursor %q / %q: %d %s", lastEventID, after, rec.Code, rec.Body.String())
		}
	})
}
