package mast

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testing/fakeorchestrator"
)

// Every command, through the orchestrator, against the mock agent: a
// session made, listed, prompted into a tool call that asks permission,
// approved (the tool runs), its messages and diff read; another denied
// (the tool does not run); a slow turn aborted.
func TestCommands(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	o := startOrchestrator(t, fakeorchestrator.Options{})
	startDaemon(t, c, o, nil)
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}

	var s Session
	mustOK(t, command(t, o, map[string]any{"type": "create_session", "agentType": "mock"}), &s)
	if !strings.HasPrefix(s.ID, "ses_") || s.AgentType != "mock" || s.CreatedAt == "" {
		t.Fatalf("session %+v", s)
	}
	var listed []Session
	mustOK(t, command(t, o, map[string]any{"type": "list_sessions"}), &listed)
	if len(listed) != 1 || listed[0].ID != s.ID || listed[0].AgentType != "mock" {
		t.Fatalf("list_sessions %+v", listed)
	}

	// Allowed: the tool call completes. (The phone's prompt, which the
	// orchestrator caches itself.)
	r, err := o.Prompt(ctxFor(t), s.ID, "REQUEST_APPROVAL please")
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, r, nil)
	if len(r.Data) != 0 {
		t.Fatalf("send_prompt data %s, want none", r.Data)
	}
	pid := permissionID(t, o, s.ID)
	mustOK(t, command(t, o, map[string]any{"type": "approve_permission", "sessionId": s.ID, "permissionId": pid}), nil)
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return turnEnded(v, s.ID, 1) }); err != nil {
		t.Fatal(err)
	}
	o.Read(func(v fakeorchestrator.View) {
		if !hasEvent(v, s.ID, EventPermissionUpdated, func(d map[string]any) bool {
			return d["permissionId"] == pid && d["status"] == "approved"
		}) {
			t.Error("no mast.permission.updated approved")
		}
		if !hasEvent(v, s.ID, EventPartUpdated, func(d map[string]any) bool {
			p, _ := d["part"].(map[string]any)
			return p["type"] == "tool-invocation" && p["status"] == "completed" && p["toolName"] != "command" && p["toolName"] != "file_change"
		}) {
			t.Error("the approved tool call did not complete")
		}
		// The cache: a user and an assistant message, both complete.
		msgs := v.Messages(s.ID)
		roles := map[string]bool{}
		for _, m := range msgs {
			if !m.Completed {
				t.Errorf("message %s not completed in the cache", m.ID)
			}
			roles[m.Role] = true
		}
		if !roles["user"] || !roles["assistant"] {
			t.Errorf("cached messages %+v", msgs)
		}
	})

	var msgs []Message
	mustOK(t, command(t, o, map[string]any{"type": "get_messages", "sessionId": s.ID}), &msgs)
	if len(msgs) != 2 || msgs[0].Role != "user" || msgs[1].Role != "assistant" || !msgs[0].Completed || !msgs[1].Completed {
		t.Fatalf("get_messages %+v", msgs)
	}
	if got := msgs[0].Parts[0]["content"]; got != "REQUEST_APPROVAL please" {
		t.Fatalf("the user message's text is %v", got)
	}
	var tool map[string]any
	for _, p := range msgs[1].Parts {
		if p["itemType"] == "tool_call" {
			tool = p
		}
	}
	if tool == nil || tool["status"] != "completed" {
		t.Fatalf("assistant parts %+v: no completed tool call", msgs[1].Parts)
	}

	var diff struct {
		Files []struct{ Path, Kind string } `json:"files"`
	}
	mustOK(t, command(t, o, map[string]any{"type": "get_diff", "sessionId": s.ID}), &diff)
	if len(diff.Files) != 1 || diff.Files[0].Path != "mock-notes.md" {
		t.Fatalf("get_diff %+v", diff)
	}

	// Denied: the tool call is declined.
	mustOK(t, command(t, o, map[string]any{"type": "send_prompt", "sessionId": s.ID, "text": "REQUEST_APPROVAL again"}), nil)
	var pid2 string
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		for _, ev := range eventsOf(v, s.ID) {
			if ev["type"] == EventPermissionCreated {
				if id := ev["data"].(map[string]any)["permission"].(map[string]any)["id"].(string); id != pid {
					pid2 = id
				}
			}
		}
		return pid2 != ""
	}); err != nil {
		t.Fatal(err)
	}
	mustOK(t, command(t, o, map[string]any{"type": "deny_permission", "sessionId": s.ID, "permissionId": pid2}), nil)
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		return turnEnded(v, s.ID, 2) && hasEvent(v, s.ID, EventPermissionUpdated, func(d map[string]any) bool {
			return d["permissionId"] == pid2 && d["status"] == "denied"
		}) && hasEvent(v, s.ID, EventPartUpdated, func(d map[string]any) bool {
			p, _ := d["part"].(map[string]any)
			return p["itemType"] == "tool_call" && p["status"] == "declined"
		})
	}); err != nil {
		t.Fatal(err)
	}

	// Abort: a slow turn ends interrupted.
	mustOK(t, command(t, o, map[string]any{"type": "send_prompt", "sessionId": s.ID, "text": "SLOW"}), nil)
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		return hasEvent(v, s.ID, EventSessionUpdated, func(d map[string]any) bool {
			return d["session"].(map[string]any)["status"] == "running" && d["seq"].(float64) > 0 && turnEnded(v, s.ID, 2)
		}) && len(eventsOf(v, s.ID)) > 0
	}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, c, s.ID)
	mustOK(t, command(t, o, map[string]any{"type": "abort_session", "sessionId": s.ID}), nil)
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool {
		return hasEvent(v, s.ID, EventSessionUpdated, func(d map[string]any) bool {
			turn, _ := d["session"].(map[string]any)["turn"].(map[string]any)
			return turn["status"] == "interrupted"
		})
	}); err != nil {
		t.Fatal(err)
	}
}

func waitRunning(t *testing.T, c *core, id string) {
	t.Helper()
	ctx := ctxFor(t)
	for ctx.Err() == nil {
		if info, err := c.m.Get(id); err == nil && info.State == "running" {
			return
		}
		select {
		case <-ctx.Done():
		case <-timeAfter(5):
		}
	}
	t.Fatal("the session's turn did not start")
}

// Every failure is one error result with the reason, and none ends the
// connection: unknown sessions, permissions and commands, a prompt that
// cannot start, an answer to a permission already answered, missing
// fields, malformed and non-JSON frames.
func TestCommandErrors(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	o := startOrchestrator(t, fakeorchestrator.Options{})
	startDaemon(t, c, o, nil)
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}
	var s Session
	mustOK(t, command(t, o, map[string]any{"type": "create_session"}), &s)
	if s.AgentType != "mock" {
		t.Fatalf("the default agent is %q, want the only one offered", s.AgentType)
	}

	for name, tc := range map[string]struct {
		cmd  map[string]any
		want string
	}{
		"unknown type":          {map[string]any{"type": "reboot"}, "Unknown command type: reboot"},
		"unknown session":       {map[string]any{"type": "send_prompt", "sessionId": "ses_nope", "text": "hi"}, "no such session"},
		"messages of none":      {map[string]any{"type": "get_messages", "sessionId": "ses_nope"}, "no such session"},
		"diff of none":          {map[string]any{"type": "get_diff", "sessionId": "ses_nope"}, "no such session"},
		"abort of none":         {map[string]any{"type": "abort_session", "sessionId": "ses_nope"}, "no such session"},
		"no session id":         {map[string]any{"type": "get_messages"}, "needs a sessionId"},
		"empty prompt":          {map[string]any{"type": "send_prompt", "sessionId": s.ID}, "needs a text"},
		"no permission id":      {map[string]any{"type": "approve_permission", "sessionId": s.ID}, "needs a permissionId"},
		"unknown permission":    {map[string]any{"type": "approve_permission", "sessionId": s.ID, "permissionId": "p9"}, "no permission p9"},
		"deny unknown":          {map[string]any{"type": "deny_permission", "sessionId": s.ID, "permissionId": "p9"}, "no permission p9"},
		"unavailable agent":     {map[string]any{"type": "create_session", "agentType": "codex"}, "not available"},
		"unknown agent":         {map[string]any{"type": "create_session", "agentType": "claude-code"}, "no such agent"},
		"approve in no session": {map[string]any{"type": "approve_permission", "sessionId": "ses_nope", "permissionId": "p1"}, "no such session"},
	} {
		t.Run(name, func(t *testing.T) { mustFail(t, command(t, o, tc.cmd), tc.want) })
	}

	// A prompt while a turn runs fails to start: an error, not "ok".
	mustOK(t, command(t, o, map[string]any{"type": "send_prompt", "sessionId": s.ID, "text": "REQUEST_APPROVAL"}), nil)
	pid := permissionID(t, o, s.ID)
	mustFail(t, command(t, o, map[string]any{"type": "send_prompt", "sessionId": s.ID, "text": "another"}), "")
	// Answered twice: the second is an error naming the first answer.
	mustOK(t, command(t, o, map[string]any{"type": "deny_permission", "sessionId": s.ID, "permissionId": pid}), nil)
	mustFail(t, command(t, o, map[string]any{"type": "approve_permission", "sessionId": s.ID, "permissionId": pid}), "already resolved (denied")

	// Frames that are not commands: answered where a requestId can be
	// read, never the end of the connection.
	for _, raw := range []string{`not json`, `{"type":`, `[1,2]`, `{"requestId":"r-bad","type":5}`,
		`{"requestId":"r-notype"}`, `{"type":"send_prompt","sessionId":"x","text":"no id"}`, `{"requestId":"r-odd","type":"list_sessions","sessionId":7}`} {
		if err := o.SendRaw(ctxFor(t), []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Wait(ctxFor(t), func(v fakeorchestrator.View) bool { return len(v.Unanswered()) >= 3 }); err != nil {
		t.Fatal(err)
	}
	mustOK(t, command(t, o, map[string]any{"type": "list_sessions"}), nil) // still connected
	o.Read(func(v fakeorchestrator.View) {
		ids := map[string]string{}
		for _, f := range v.Unanswered() {
			data, _ := json.Marshal(f)
			if f["type"] != "command_result" || f["status"] != "error" {
				t.Errorf("unexpected frame %s", data)
			}
			ids[f["requestId"].(string)] = f["error"].(string)
		}
		if len(ids) != 3 || ids["r-bad"] == "" || ids["r-notype"] == "" || ids["r-odd"] == "" {
			t.Errorf("answers to bad frames: %v", ids)
		}
		if v.Connects() != 1 {
			t.Errorf("%d connections: a bad frame dropped one", v.Connects())
		}
	})
}

// Many commands at once (more than run concurrently): each gets exactly
// one result, its own.
func TestManyCommandsAtOnce(t *testing.T) {
	c := openCore(t, t.TempDir(), nil)
	o := startOrchestrator(t, fakeorchestrator.Options{})
	startDaemon(t, c, o, nil)
	if err := o.Wait(ctxFor(t), connected); err != nil {
		t.Fatal(err)
	}
	const n = 3 * maxCommands
	errs := make(chan error, n)
	for i := range n {
		go func() {
			cmd := map[string]any{"type": "list_sessions"}
			if i%2 == 1 {
				cmd = map[string]any{"type": "get_messages", "sessionId": "ses_none"}
			}
			r, err := o.Command(ctxFor(t), cmd)
			switch {
			case err != nil:
				errs <- err
			case (i%2 == 0) != (r.Status == "ok"):
				errs <- fmt.Errorf("command %d: %+v", i, r)
			default:
				errs <- nil
			}
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	o.Read(func(v fakeorchestrator.View) {
		if len(v.Unanswered()) != 0 {
			t.Errorf("results nobody asked for: %v", v.Unanswered())
		}
	})
}
