package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

// The sessions API of `tether serve`, with the real CLI, sandbox on and
// off: create a session, follow its events, answer its approvals over
// HTTP (the approver sees the model's command, never the sandbox's), and
// close it. Without the token nothing answers.
func TestRealCLISessionsAPI(t *testing.T) {
	timed(t)
	for _, sandboxed := range []bool{true, false} {
		t.Run(map[bool]string{true: "Sandbox", false: "NoSandbox"}[sandboxed], func(t *testing.T) {
			tr := startRunner(t, sandboxed)
			api := apiClient{t: t, base: "http" + strings.TrimSuffix(strings.TrimPrefix(tr.URL, "ws"), "/sessions"), token: tr.Token}
			if code := api.call("GET", "/v1/sessions", "", nil, ""); code != 200 {
				t.Fatalf("list: %d", code)
			}
			if code := api.call("GET", "/v1/sessions", "", nil, "wrong-token-wrong-token"); code != 401 {
				t.Fatalf("a wrong token got %d", code)
			}
			id := newWorkspaceID("api")
			var info sessions.Info
			if code := api.call("POST", "/v1/sessions", `{"agent":"claude","workspace_id":"`+id+`"}`, &info, ""); code != 201 {
				t.Fatalf("create: %d", code)
			}
			events := api.stream("/v1/sessions/" + info.ID + "/events")
			dir := tr.WorkspaceDir(id)

			for _, tc := range []struct {
				file   string
				answer agent.Decision
				status agent.ItemStatus
			}{{"via-api.txt", agent.Allow, agent.ItemDone}, {"refused.txt", agent.Deny, agent.ItemDeclined}} {
				cmd := "touch " + tc.file
				body, _ := json.Marshal(map[string]string{"text": bashPrompt(cmd)})
				if code := api.call("POST", "/v1/sessions/"+info.ID+"/prompt", string(body), nil, ""); code != 202 {
					t.Fatalf("prompt: %d", code)
				}
				asked := untilKind(t, events, agent.KindApprovalRequested)
				if !strings.Contains(string(asked.Approval.Input), cmd) || strings.Contains(string(asked.Approval.Input), "bwrap") ||
					asked.Approval.Title != "Bash: "+cmd {
					t.Fatalf("the approver sees %s / %q", asked.Approval.Input, asked.Approval.Title)
				}
				var pending struct{ Approvals []agent.Approval }
				if api.call("GET", "/v1/approvals", "", &pending, ""); len(pending.Approvals) != 1 {
					t.Fatalf("pending %+v", pending)
				}
				path := fmt.Sprintf("/v1/sessions/%s/approvals/%s/resolve", info.ID, asked.Approval.ID)
				if code := api.call("POST", path, `{"decision":"`+string(tc.answer)+`"}`, nil, ""); code != 200 {
					t.Fatalf("resolve: %d", code)
				}
				var item *agent.Item
				for e := untilKind(t, events, agent.KindItemCompleted); ; e = untilKind(t, events, agent.KindItemCompleted) {
					if e.Item.Type == agent.ItemCommand {
						item = e.Item
						break
					}
				}
				if item.Status != tc.status || item.Command.Command != cmd {
					t.Fatalf("command %+v, want %s", item, tc.status)
				}
				untilKind(t, events, agent.KindTurnCompleted)
				_, err := os.Stat(filepath.Join(dir, tc.file))
				if ran := err == nil; ran != (tc.answer == agent.Allow) {
					t.Fatalf("%s: ran %v after %s", cmd, ran, tc.answer)
				}
			}
			if code := api.call("DELETE", "/v1/sessions/"+info.ID, "", nil, ""); code != 204 {
				t.Fatalf("close: %d", code)
			}
			untilKind(t, events, agent.KindSessionEnded)
		})
	}
}

type apiClient struct {
	t           *testing.T
	base, token string
}

func (c apiClient) call(method, path, body string, out any, token string) int {
	c.t.Helper()
	if token == "" {
		token = c.token
	}
	req, _ := http.NewRequest(method, c.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

// stream follows an SSE stream of canonical events.
func (c apiClient) stream(path string) <-chan agent.Event {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		c.t.Fatalf("stream: %v %v", err, resp)
	}
	ch := make(chan agent.Event, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var e agent.Event
				if json.Unmarshal([]byte(data), &e) == nil {
					ch <- e
				}
			}
		}
	}()
	c.t.Cleanup(func() { cancel(); <-done })
	return ch
}

func untilKind(t *testing.T, ch <-chan agent.Event, k agent.Kind) agent.Event {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended before %s", k)
			}
			if err := e.Validate(); err != nil {
				t.Fatalf("%v: %+v", err, e)
			}
			if e.Kind == k {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s", k)
		}
	}
}
