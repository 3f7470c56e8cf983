package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/runner/auth"
	"github.com/tetherhq/tether/runner/sessions"
	"github.com/tetherhq/tether/server"
)

// A session a host opens through the SDK's Runner option (protocol v1)
// is one of the core's: the sessions API lists it and streams its
// events, and its permission request is an approval of the one approval
// system, listed with every other, answered through the API while the
// host's own callback waits — the CLI gets the API's answer, once.
func TestV1SessionIsOneOfTheCore(t *testing.T) {
	r := serve(t, "demo", server.Config{Auth: auth.LoadOptions{Tokens: []string{tokenA}}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	asked := make(chan claude.PermissionRequest, 1)
	hostAnswer := make(chan struct{})
	client, err := claude.Connect(ctx, claude.Options{
		Runner: &claude.RunnerOptions{URL: r.url(), Token: tokenA, WorkspaceID: "onecore"},
		CanUseTool: func(ctx context.Context, req claude.PermissionRequest) (claude.PermissionResult, error) {
			asked <- req
			select { // the host is slow to decide; the API answers first
			case <-hostAnswer:
			case <-ctx.Done():
			}
			return claude.Deny{Message: "the host said no, too late"}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	defer close(hostAnswer)
	id := client.SessionID()

	var list struct{ Sessions []sessions.Info }
	if code := get(t, r, "GET", "/v1/sessions", "", &list); code != 200 || len(list.Sessions) != 1 ||
		list.Sessions[0].ID != id || !list.Sessions[0].Native || !list.Sessions[0].Relay || list.Sessions[0].Agent != "claude" {
		t.Fatalf("the v1 session in GET /v1/sessions: %d %+v (id %s)", code, list, id)
	}
	events := streamKinds(t, ctx, "http://"+r.addr+"/v1/sessions/"+id+"/events")

	if err := client.Query(ctx, "write hello"); err != nil {
		t.Fatal(err)
	}
	req := <-asked
	var pending struct{ Approvals []agent.Approval }
	if code := get(t, r, "GET", "/v1/approvals", "", &pending); code != 200 || len(pending.Approvals) != 1 ||
		pending.Approvals[0].SessionID != id || pending.Approvals[0].Tool != req.ToolName {
		t.Fatalf("the v1 session's permission request in GET /v1/approvals: %d %+v (asked %s)", code, pending, req.ToolName)
	}
	a := pending.Approvals[0]
	var won agent.Resolution
	if code := get(t, r, "POST", "/v1/sessions/"+id+"/approvals/"+a.ID+"/resolve", `{"decision":"allow"}`, &won); code != 200 || won.Decision != agent.Allow {
		t.Fatalf("resolve through the API: %d %+v", code, won)
	}
	// The CLI ran the tool the API allowed, and the turn ends.
	res, err := claude.FinalResult(client.Receive(ctx))
	if err != nil || res.IsError {
		t.Fatalf("the turn after the API's answer: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(r.cfg.WorkspaceRoot, "onecore", "hello.txt")); err != nil {
		t.Fatalf("the allowed Write did not run: %v", err)
	}
	if code := get(t, r, "GET", "/v1/approvals", "", &pending); code != 200 || len(pending.Approvals) != 0 {
		t.Fatalf("approvals after the answer: %d %+v", code, pending)
	}
	for _, want := range []agent.Kind{agent.KindSessionStarted, agent.KindTurnStarted, agent.KindApprovalRequested,
		agent.KindApprovalResolved, agent.KindTurnCompleted} {
		if !events.waitFor(want, 30*time.Second) {
			t.Fatalf("the sessions API's stream of the v1 session never showed %s (saw %v)", want, events.seen())
		}
	}
}

// kindStream follows an SSE stream and records the kinds it sees.
type kindStream struct {
	kinds chan agent.Kind
	all   []agent.Kind
}

func streamKinds(t *testing.T, ctx context.Context, url string) *kindStream {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream %s: %v %v", url, resp, err)
	}
	ks := &kindStream{kinds: make(chan agent.Kind, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ks.kinds)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var e agent.Event
				if json.Unmarshal([]byte(data), &e) == nil {
					ks.kinds <- e.Kind
				}
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close(); <-done })
	return ks
}

func (ks *kindStream) waitFor(k agent.Kind, within time.Duration) bool {
	timeout := time.After(within)
	for {
		for _, seen := range ks.all {
			if seen == k {
				return true
			}
		}
		select {
		case got, ok := <-ks.kinds:
			if !ok {
				return false
			}
			ks.all = append(ks.all, got)
		case <-timeout:
			return false
		}
	}
}

func (ks *kindStream) seen() []agent.Kind { return ks.all }

// A host that answers its session's permission request first decides it:
// the durable record says so, and a later answer through the API is
// refused with the host's.
func TestV1HostAnswerStandsInTheCore(t *testing.T) {
	r := serve(t, "demo", server.Config{Auth: auth.LoadOptions{Tokens: []string{tokenA}}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := claude.Connect(ctx, claude.Options{
		Runner: &claude.RunnerOptions{URL: r.url(), Token: tokenA, WorkspaceID: "hostfirst"},
		CanUseTool: func(context.Context, claude.PermissionRequest) (claude.PermissionResult, error) {
			return claude.Deny{Message: "not in this workspace"}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	id := client.SessionID()
	events := streamKinds(t, ctx, "http://"+r.addr+"/v1/sessions/"+id+"/events")
	if err := client.Query(ctx, "write hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := claude.FinalResult(client.Receive(ctx)); err != nil {
		t.Fatal(err)
	}
	if !events.waitFor(agent.KindApprovalResolved, 30*time.Second) {
		t.Fatalf("no approval.resolved in the session's stream: %v", events.seen())
	}
	if _, err := os.Stat(filepath.Join(r.cfg.WorkspaceRoot, "hostfirst", "hello.txt")); err == nil {
		t.Fatal("the Write the host denied ran")
	}
	var refused struct {
		Error struct{ Code, Message string }
	}
	// The approval's id is the CLI's request id: read it from the log.
	approvalID := lastApprovalID(t, r, id)
	if code := get(t, r, "POST", "/v1/sessions/"+id+"/approvals/"+approvalID+"/resolve", `{"decision":"allow"}`, &refused); code != 409 ||
		!strings.Contains(refused.Error.Message, "deny") {
		t.Fatalf("an answer after the host's: %d %+v", code, refused)
	}
}

// lastApprovalID is the id of the last approval session id asked for, as
// its events say.
func lastApprovalID(t *testing.T, r *running, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+r.addr+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+tokenA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	found := ""
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e agent.Event
		if json.Unmarshal([]byte(data), &e) == nil {
			if e.Kind == agent.KindApprovalRequested {
				found = e.Approval.ID
			}
			if e.Kind == agent.KindTurnCompleted {
				return found
			}
		}
	}
	t.Fatal("the session's turn never completed in its stream")
	return ""
}
