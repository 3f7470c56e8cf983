package mast

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/driver/mock"
	"github.com/tetherhq/tether/frontend/sessionsapi"
	"github.com/tetherhq/tether/internal/testing/fakeorchestrator"
	"github.com/tetherhq/tether/runner/eventlog"
	"github.com/tetherhq/tether/runner/sessions"
)

// promptText is a cached user message's text: the phone's part
// ({type, text}) where the orchestrator cached it, the daemon's
// ({type, content}) where the daemon announced it.
func promptText(m fakeorchestrator.Message) string {
	var texts []string
	for _, p := range m.Parts {
		part, _ := p.(map[string]any)
		for _, key := range []string{"text", "content"} {
			if s, ok := part[key].(string); ok && s != "" {
				texts = append(texts, s)
			}
		}
	}
	return strings.Join(texts, "\n")
}

// checkPromptsOnce holds the orchestrator's cache of a session to its
// prompts: each exactly once, with its text, completed.
func checkPromptsOnce(t *testing.T, o *fakeorchestrator.Server, sessionID string, prompts []string) {
	t.Helper()
	o.Read(func(v fakeorchestrator.View) {
		var cached []string
		for _, m := range v.Messages(sessionID) {
			if m.Role != "user" {
				continue
			}
			text := promptText(m)
			cached = append(cached, text)
			if text == "" || !m.Completed {
				t.Errorf("cached prompt %s: text %q, completed %v", m.ID, text, m.Completed)
			}
		}
		slices.Sort(cached)
		want := slices.Sorted(slices.Values(prompts))
		if !slices.Equal(cached, want) {
			t.Errorf("the cache's prompts %q, want each of %q once", cached, want)
		}
	})
}

// promptThroughAPI sends a prompt through the sessions API, as the web
// console does: the orchestrator never sees it sent.
func promptThroughAPI(t *testing.T, api, sessionID, text string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	req, err := http.NewRequestWithContext(ctxFor(t), http.MethodPost, api+"/v1/sessions/"+sessionID+"/prompt", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the sessions API's prompt: %s", resp.Status)
	}
}

func phonePrompt(t *testing.T, o *fakeorchestrator.Server, sessionID, text string) {
	t.Helper()
	r, err := o.Prompt(ctxFor(t), sessionID, text)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, r, nil)
}

func waitTurns(t *testing.T, o *fakeorchestrator.Server, sessionID string, n int) {
	t.Helper()
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return turnEnded(v, sessionID, n) }); err != nil {
		t.Fatalf("turn %d did not end: %v", n, err)
	}
}

// The phone's prompts and the sessions API's, through an orchestrator
// that stores its events as the seed's does (its own copy of each prompt
// the phone sends; a message created a moment late, its parts in the
// same read lost), one of them while the orchestrator was away (synced
// and replayed when it is back): the orchestrator's cache ends with each
// prompt exactly once, with its text, and get_messages has each once.
func TestPromptsCachedOnce(t *testing.T) {
	forEachWindow(t, testPromptsCachedOnce)
}

func testPromptsCachedOnce(t *testing.T, replay func(*Config)) {
	c := openCore(t, t.TempDir(), nil)
	o := startOrchestrator(t, fakeorchestrator.Options{Store: true, Bursts: true})
	startDaemon(t, c, o, replay)
	api := httptest.NewServer(sessionsapi.Handler(sessionsapi.Config{Sessions: c.m}))
	t.Cleanup(api.Close)
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}
	var s Session
	mustOK(t, command(t, o, map[string]any{"type": "create_session", "agentType": "mock"}), &s)

	prompts := []string{"first, from the phone", "from the sessions API", "through the API while the phone was away",
		"second, from the phone"}
	phonePrompt(t, o, s.ID, prompts[0])
	waitTurns(t, o, s.ID, 1)
	promptThroughAPI(t, api.URL, s.ID, prompts[1])
	waitTurns(t, o, s.ID, 2)

	o.Stop()
	promptThroughAPI(t, api.URL, s.ID, prompts[2])
	waitLogged(t, c, s.ID, 3)
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		return len(v.SyncResponses()) == 2 && turnEnded(v, s.ID, 3)
	}); err != nil {
		t.Fatal(err)
	}
	o.Read(func(v fakeorchestrator.View) {
		data, _ := json.Marshal(v.SyncResponses()[1])
		if strings.Contains(string(data), prompts[0]) {
			t.Errorf("sync_response has the phone's prompt, which the orchestrator keeps: %s", data)
		}
	})
	phonePrompt(t, o, s.ID, prompts[3])
	waitTurns(t, o, s.ID, 4)

	checkPromptsOnce(t, o, s.ID, prompts)
	o.Read(func(v fakeorchestrator.View) {
		// The events announce the API's prompts only, each as one message.
		users := map[string]string{}
		for _, ev := range eventsOf(v, s.ID) {
			data := ev["data"].(map[string]any)
			if m, _ := data["message"].(map[string]any); ev["type"] == EventMessageCreated && m["role"] == "user" {
				users[m["id"].(string)] = ""
			}
			if part, _ := data["part"].(map[string]any); part != nil {
				if _, ok := users[fmt.Sprint(data["messageID"])]; ok {
					users[fmt.Sprint(data["messageID"])] = fmt.Sprint(part["content"])
				}
			}
		}
		announced := slices.Sorted(maps.Values(users))
		if want := slices.Sorted(slices.Values(prompts[1:3])); !slices.Equal(announced, want) {
			t.Errorf("prompts announced %q, want %q", announced, want)
		}
	})
	var msgs []Message
	mustOK(t, command(t, o, map[string]any{"type": "get_messages", "sessionId": s.ID}), &msgs)
	var users []string
	for _, m := range msgs {
		if m.Role == "user" {
			if len(m.Parts) != 1 || !m.Completed {
				t.Errorf("get_messages: prompt %+v", m)
				continue
			}
			users = append(users, fmt.Sprint(m.Parts[0]["content"]))
		}
	}
	if !slices.Equal(users, prompts) {
		t.Errorf("get_messages' prompts %q, want %q", users, prompts)
	}
}

// abort_session with no turn running is done (nothing to stop), for a
// session idle and one that has ended, as the seed's adapters answer it;
// an unknown session stays an error.
func TestAbortWithoutATurn(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	o := startOrchestrator(t, fakeorchestrator.Options{})
	startDaemon(t, c, o, nil)
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}
	var s Session
	mustOK(t, command(t, o, map[string]any{"type": "create_session", "agentType": "mock"}), &s)
	mustOK(t, command(t, o, map[string]any{"type": "abort_session", "sessionId": s.ID}), nil)
	if err := c.m.Close(ctxFor(t), s.ID); err != nil {
		t.Fatal(err)
	}
	mustOK(t, command(t, o, map[string]any{"type": "abort_session", "sessionId": s.ID}), nil)
	mustFail(t, command(t, o, map[string]any{"type": "abort_session", "sessionId": "ses_nope"}), "no such session")
}

// The daemon restarts (its core with it, on the same data) with a
// session the phone used: the next prompt to it resumes the agent's own
// conversation (the mock's outlives the core, as a real agent's store
// does), under the same id, its seqs going on; the phone's cache ends with
// each prompt once.
func TestDaemonRestartResumesSession(t *testing.T) {
	dir := t.TempDir()
	agentStore := mock.New(mock.Config{})
	c1 := openCoreWith(t, dir, agentStore, eventlog.Options{})
	o := startOrchestrator(t, fakeorchestrator.Options{Store: true, Bursts: true})
	r1 := startDaemon(t, c1, o, nil)
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}
	var s Session
	mustOK(t, command(t, o, map[string]any{"type": "create_session", "agentType": "mock"}), &s)
	phonePrompt(t, o, s.ID, "before the restart")
	waitTurns(t, o, s.ID, 1)
	if err := r1.stop(t); err != nil {
		t.Fatal(err)
	}
	c1.close()

	c2 := openCoreWith(t, dir, agentStore, eventlog.Options{})
	startDaemon(t, c2, o, nil)
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return v.Connects() == 2 && connected(v) }); err != nil {
		t.Fatal(err)
	}
	before, err := c2.m.Get(s.ID)
	if err != nil || before.State != sessions.StateEnded {
		t.Fatalf("after the restart: %+v %v", before, err)
	}
	phonePrompt(t, o, s.ID, "after the restart")
	waitTurns(t, o, s.ID, 2)

	after, err := c2.m.Get(s.ID)
	if err != nil || after.ID != s.ID || after.State == sessions.StateEnded || after.LastSeq <= before.LastSeq {
		t.Fatalf("the resumed session: %+v %v (before %+v)", after, err, before)
	}
	next := before.LastSeq + 1
	for e, err := range c2.m.Events(ctxFor(t), s.ID, before.LastSeq) {
		if err != nil {
			t.Fatal(err)
		}
		if uint64(e.Seq) != next {
			t.Fatalf("seq %d after %d: the log did not go on", e.Seq, next-1)
		}
		next++
		if uint64(e.Seq) >= after.LastSeq {
			break
		}
	}
	var msgs []Message
	mustOK(t, command(t, o, map[string]any{"type": "get_messages", "sessionId": s.ID}), &msgs)
	last := msgs[len(msgs)-1]
	if reply := fmt.Sprint(last.Parts); last.Role != "assistant" || !strings.Contains(reply, "turn 2") {
		t.Fatalf("the last message %+v: not the second turn of the same conversation", last)
	}
	checkPromptsOnce(t, o, s.ID, []string{"before the restart", "after the restart"})
}
