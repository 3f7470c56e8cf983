package sessionsapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/driver/claudecli"
	"github.com/tetherhq/tether/frontend/sessionsapi"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/internal/testing/runnertest"
	"github.com/tetherhq/tether/runner/sessions"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the mock claude CLI.
	if os.Getenv(mockclaude.EnvMain) == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

// server is the API on loopback over a sessions core whose "claude" agent
// is the mock CLI's demo (a streamed reply, then a Write that asks).
func server(t *testing.T) string {
	t.Helper()
	return runnertest.SessionsAPI(t, map[string]agent.Driver{"claude": runnertest.MockClaude("demo")})
}

// call sends a JSON request and decodes the JSON answer into out (if any).
func call(t *testing.T, method, url, body string, out any, header ...string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, data)
		}
	}
	return resp.StatusCode
}

type sseEvent struct {
	id    string
	event agent.Event
}

// stream reads a session's SSE stream into a channel until it ends.
func stream(t *testing.T, url, lastID string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	ch := make(chan sseEvent, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var cur sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				cur.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.event); err != nil {
					t.Error(err)
					return
				}
			case line == "" && cur.id != "":
				ch <- cur
				cur = sseEvent{}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch
}

func until(t *testing.T, ch <-chan sseEvent, k agent.Kind, seen *[]sseEvent) sseEvent {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended before %s", k)
			}
			*seen = append(*seen, e)
			if e.event.Kind == k {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s on the stream", k)
		}
	}
}

// A client's whole journey: create with a prompt, follow the stream, see
// the approval listed, answer it (a second answer is told the first),
// resume the stream from a seq, read the messages, close.
func TestSessionsAPIJourney(t *testing.T) {
	base := server(t)
	var info sessions.Info
	if code := call(t, "POST", base+"/v1/sessions", `{"agent":"claude","workspace_id":"w1","prompt":"hello"}`, &info); code != 201 || info.ID == "" {
		t.Fatalf("create: %d %+v", code, info)
	}
	events := stream(t, base+"/v1/sessions/"+info.ID+"/events", "")
	var seen []sseEvent
	asked := until(t, events, agent.KindApprovalRequested, &seen)

	var pending struct{ Approvals []agent.Approval }
	if call(t, "GET", base+"/v1/approvals", "", &pending); len(pending.Approvals) != 1 || pending.Approvals[0].ID != asked.event.Approval.ID {
		t.Fatalf("pending %+v", pending)
	}
	resolveURL := fmt.Sprintf("%s/v1/sessions/%s/approvals/%s/resolve", base, info.ID, asked.event.Approval.ID)
	// An edited input reaches the core, which refuses one that is no
	// object before anything is decided.
	var refused struct{ Error struct{ Code string } }
	if code := call(t, "POST", resolveURL, `{"decision":"allow","input":["rm","-rf"]}`, &refused); code != 400 || refused.Error.Code != "invalid_request" {
		t.Fatalf("resolve with an input that is no object: %d %+v", code, refused)
	}
	var won agent.Resolution
	if code := call(t, "POST", resolveURL, `{"decision":"allow"}`, &won, "X-Test-User", "laptop"); code != 200 || won.By != "laptop" {
		t.Fatalf("resolve: %d %+v", code, won)
	}
	var conflict struct {
		Error      struct{ Code string }
		Resolution agent.Resolution
	}
	if code := call(t, "POST", resolveURL, `{"decision":"deny"}`, &conflict, "X-Test-User", "phone"); code != 409 ||
		conflict.Error.Code != "already_resolved" || conflict.Resolution.By != "laptop" {
		t.Fatalf("second resolve: %d %+v", code, conflict)
	}
	until(t, events, agent.KindTurnCompleted, &seen)
	for i, e := range seen {
		if e.id != strconv.Itoa(i+1) || e.event.Seq != int64(i+1) {
			t.Fatalf("event %d has id %s seq %d", i, e.id, e.event.Seq)
		}
	}

	// A client that dropped after seq 2 comes back with Last-Event-ID.
	again := stream(t, base+"/v1/sessions/"+info.ID+"/events", "2")
	var resumed []sseEvent
	until(t, again, agent.KindTurnCompleted, &resumed)
	if resumed[0].id != "3" || len(resumed) != len(seen)-2 {
		t.Fatalf("resumed from %s with %d events, want 3 and %d", resumed[0].id, len(resumed), len(seen)-2)
	}

	var msgs struct{ Items []agent.Item }
	if code := call(t, "GET", base+"/v1/sessions/"+info.ID+"/messages", "", &msgs); code != 200 || len(msgs.Items) == 0 {
		t.Fatalf("messages: %d %+v", code, msgs)
	}
	// The allowed Write made hello.txt: the workspace's own diff shows it,
	// though Claude Code reports no diff itself.
	var diff struct{ Changes []agent.FileChange }
	if code := call(t, "GET", base+"/v1/sessions/"+info.ID+"/diff", "", &diff); code != 200 ||
		len(diff.Changes) != 1 || diff.Changes[0].Path != "hello.txt" || diff.Changes[0].Kind != agent.ChangeAdd {
		t.Fatalf("diff: %d %+v", code, diff)
	}
	if code := call(t, "DELETE", base+"/v1/sessions/"+info.ID, "", nil); code != 204 {
		t.Fatalf("close: %d", code)
	}
	end := until(t, events, agent.KindSessionEnded, &seen)
	if end.event.Session.Reason != "closed" {
		t.Fatalf("ended %+v", end.event.Session)
	}
	if _, open := <-events; open {
		t.Fatal("the stream went on after session.ended")
	}
}

// Bad input gets a clear error in the one shape, never a hang.
func TestSessionsAPIBadInput(t *testing.T) {
	base := server(t)
	cases := []struct {
		method, path, body string
		status             int
		code               string
		header             []string
	}{
		{"POST", "/v1/sessions", `{"agent":"nope","workspace_id":"w"}`, 400, "unknown_agent", nil},
		{"POST", "/v1/sessions", `{"agent":"claude"}`, 400, "invalid_request", nil},
		{"POST", "/v1/sessions", `{"agent":"claude","workspace_id":"../x"}`, 400, "invalid_workspace_id", nil},
		{"POST", "/v1/sessions", `{"agent":"claude","workspace_id":"w","color":"red"}`, 400, "invalid_request", nil},
		{"POST", "/v1/sessions", `not json`, 400, "invalid_request", nil},
		{"POST", "/v1/sessions", `{"agent":"claude","workspace_id":"w","fork":true}`, 400, "invalid_request", nil},
		{"POST", "/v1/sessions", `{"agent":"` + strings.Repeat("a", sessionsapi.MaxPromptBody) + `"}`, 413, "body_too_large", nil},
		{"GET", "/v1/sessions/ses_nope", ``, 404, "session_not_found", nil},
		{"POST", "/v1/sessions/ses_nope/prompt", `{"text":"hi"}`, 404, "session_not_found", nil},
		{"POST", "/v1/sessions/ses_nope/prompt", `{}`, 400, "invalid_request", nil},
		{"GET", "/v1/sessions/ses_nope/events", ``, 404, "session_not_found", nil},
		{"GET", "/v1/sessions/ses_nope/events", ``, 400, "invalid_request", []string{"Last-Event-ID", "minus-one"}},
		{"POST", "/v1/sessions/ses_nope/approvals/a/resolve", `{"decision":"maybe"}`, 400, "invalid_request", nil},
		{"POST", "/v1/sessions/ses_nope/approvals/a/resolve", `{"decision":"allow"}`, 404, "approval_not_found", nil},
		{"GET", "/v1/nothing", ``, 404, "not_found", nil},
		// One JSON object, sent as JSON, and nothing after it.
		{"POST", "/v1/sessions", `{"agent":"nope","workspace_id":"w"}`, 400, "unknown_agent", []string{"Content-Type", "application/json; charset=utf-8"}},
		{"POST", "/v1/sessions", `{"agent":"nope","workspace_id":"w"}`, 415, "unsupported_media_type", []string{"Content-Type", "text/plain"}},
		{"POST", "/v1/sessions", `{"agent":"nope","workspace_id":"w"}`, 415, "unsupported_media_type", []string{"Content-Type", ""}},
		{"POST", "/v1/sessions/ses_nope/prompt", `{"text":"hi"}`, 415, "unsupported_media_type", []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"POST", "/v1/sessions", `{"agent":"nope","workspace_id":"w"} {"agent":"claude"}`, 400, "invalid_request", nil},
		{"POST", "/v1/sessions", `{"agent":"nope","workspace_id":"w"}]`, 400, "invalid_request", nil},
		// A cursor no event has reached yet, however large.
		{"GET", "/v1/events", ``, 400, "cursor_ahead", []string{"Last-Event-ID", "18446744073709551614"}},
		{"GET", "/v1/events?after=9223372036854775808", ``, 400, "cursor_ahead", nil},
		{"GET", "/v1/events?after=-1", ``, 400, "invalid_request", nil},
		{"GET", "/v1/events?after=18446744073709551616", ``, 400, "invalid_request", nil},
	}
	for _, tc := range cases {
		var out struct {
			Error struct{ Code, Message string }
		}
		if code := call(t, tc.method, base+tc.path, tc.body, &out, tc.header...); code != tc.status || out.Error.Code != tc.code || out.Error.Message == "" {
			t.Errorf("%s %s: %d %+v, want %d %s", tc.method, tc.path, code, out.Error, tc.status, tc.code)
		}
	}
	// An agent that cannot start says why, and leaves its workspace free.
	broken := runnertest.SessionsAPI(t, map[string]agent.Driver{"claude": &claudecli.Canonical{Base: claude.Options{CLIPath: "/nonexistent/claude"}}})
	for range 2 {
		var out struct {
			Error struct{ Code, Message string }
		}
		if code := call(t, "POST", broken+"/v1/sessions", `{"agent":"claude","workspace_id":"w"}`, &out); code != 502 ||
			out.Error.Code != "agent_start_failed" || !strings.Contains(out.Error.Message, "/nonexistent/claude") {
			t.Errorf("agent that cannot start: %d %+v", code, out)
		}
	}
	// A busy workspace is a conflict, and a prompt during a turn too.
	var info sessions.Info
	call(t, "POST", base+"/v1/sessions", `{"agent":"claude","workspace_id":"busy","prompt":"hello"}`, &info)
	var out struct{ Error struct{ Code string } }
	if code := call(t, "POST", base+"/v1/sessions", `{"agent":"claude","workspace_id":"busy"}`, &out); code != 409 || out.Error.Code != "workspace_busy" {
		t.Errorf("busy workspace: %d %+v", code, out)
	}
	if code := call(t, "POST", base+"/v1/sessions/"+info.ID+"/prompt", `{"text":"again"}`, &out); code != 409 || out.Error.Code != "turn_in_progress" {
		t.Errorf("prompt during a turn: %d %+v", code, out)
	}
}

// The runner-wide stream: every session's events, numbered by the feed,
// resumable from a position.
func TestSessionsAPIFeed(t *testing.T) {
	base := server(t)
	var ids []string
	for _, w := range []string{"w1", "w2"} {
		var info sessions.Info
		if code := call(t, "POST", base+"/v1/sessions", `{"agent":"claude","workspace_id":"`+w+`"}`, &info); code != 201 {
			t.Fatalf("create: %d", code)
		}
		ids = append(ids, info.ID)
	}
	feed := stream(t, base+"/v1/events", "")
	var seen []sseEvent
	sessionsSeen := map[string]bool{}
	for len(sessionsSeen) < 2 {
		e := until(t, feed, agent.KindSessionStarted, &seen)
		sessionsSeen[e.event.SessionID] = true
	}
	for _, id := range ids {
		if !sessionsSeen[id] {
			t.Fatalf("the feed did not carry %s", id)
		}
	}
	for i, e := range seen {
		if e.id != strconv.Itoa(i+1) {
			t.Fatalf("feed ids %v", seen)
		}
	}
	if code := call(t, "DELETE", base+"/v1/sessions/"+ids[0], "", nil); code != 204 {
		t.Fatalf("close: %d", code)
	}
	again := stream(t, base+"/v1/events", strconv.Itoa(len(seen)))
	var after []sseEvent
	end := until(t, again, agent.KindSessionEnded, &after)
	if after[0].id != strconv.Itoa(len(seen)+1) || end.event.SessionID != ids[0] {
		t.Fatalf("resumed at %s, ended %s", after[0].id, end.event.SessionID)
	}
}

// A session's mode and model are set at its start and changed while it
// runs; what the agent does not know is refused, typed, and an ended
// session takes no change.
func TestSessionsAPIConfigure(t *testing.T) {
	base := server(t)
	var bad struct{ Error struct{ Code string } }
	if st := call(t, "POST", base+"/v1/sessions", `{"agent":"claude","workspace_id":"wc","mode":"yolo"}`, &bad); st != 400 || bad.Error.Code != "invalid_settings" {
		t.Fatalf("create in an unknown mode: %d %+v", st, bad)
	}
	var info sessions.Info
	if st := call(t, "POST", base+"/v1/sessions", `{"agent":"claude","workspace_id":"wc","mode":"plan"}`, &info); st != 201 || info.Mode != "plan" {
		t.Fatalf("create in plan mode: %d %+v", st, info)
	}
	url := base + "/v1/sessions/" + info.ID
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{}`, 400, "invalid_request"},
		{`{"mode":"yolo"}`, 400, "invalid_settings"},
		{`{"mode":"plan","color":"red"}`, 400, "invalid_request"},
	} {
		bad.Error.Code = ""
		if st := call(t, "PATCH", url, tc.body, &bad); st != tc.status || bad.Error.Code != tc.code {
			t.Fatalf("PATCH %s: %d %+v, want %d %s", tc.body, st, bad, tc.status, tc.code)
		}
	}
	if st := call(t, "PATCH", base+"/v1/sessions/ses_nope", `{"mode":"plan"}`, &bad); st != 404 {
		t.Fatalf("PATCH of no session: %d", st)
	}
	if st := call(t, "PATCH", url, `{"mode":"acceptEdits","model":"claude-other"}`, &info); st != 200 || info.Mode != "acceptEdits" || info.Model != "claude-other" {
		t.Fatalf("PATCH: %d %+v", st, info)
	}
	var got sessions.Info
	if st := call(t, "GET", url, ``, &got); st != 200 || got.Mode != "acceptEdits" || got.Model != "claude-other" {
		t.Fatalf("GET after PATCH: %d %+v", st, got)
	}
	if st := call(t, "DELETE", url, ``, nil); st != 204 {
		t.Fatalf("DELETE: %d", st)
	}
	if st := call(t, "PATCH", url, `{"mode":"plan"}`, &bad); st != 409 || bad.Error.Code != "session_ended" {
		t.Fatalf("PATCH of an ended session: %d %+v", st, bad)
	}
}
