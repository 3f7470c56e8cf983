package opencode_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	oc "github.com/tetherhq/tether/protocol/opencode"
)

// These captures come from the same server with the ask-permissions config
// and a fake model that calls write, todowrite and bash, streams
// reasoning, or fails with HTTP 500; paths are shown as <workdir>.

func lastOf[T any](evs []*oc.Event) (last T, n int) {
	for _, ev := range evs {
		if p, ok := ev.Payload.(T); ok {
			last, n = p, n+1
		}
	}
	return last, n
}

func TestGoldenWriteStream(t *testing.T) {
	evs := decodeCapture(t, "serve-event-write.sse")
	v := view(t, evs)
	v.checkTextAssembles(t)

	ask, n := lastOf[*oc.PermissionAsked](evs)
	if n != 1 || ask.Permission != "edit" || !reflect.DeepEqual(ask.Patterns, []string{"hello.txt"}) || !reflect.DeepEqual(ask.Always, []string{"*"}) {
		t.Fatalf("permission.asked = %+v", ask)
	}
	var meta struct{ Filepath, Diff string }
	if err := json.Unmarshal(ask.Metadata, &meta); err != nil || meta.Filepath != "<workdir>/hello.txt" || !strings.Contains(meta.Diff, "+hello") {
		t.Errorf("edit permission metadata %s: %v", ask.Metadata, err)
	}
	var pending []oc.PermissionRequest
	if err := json.Unmarshal(readCapture(t, "serve-permission-list.json"), &pending); err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || !reflect.DeepEqual(canonical(t, pending[0]), canonical(t, ask.PermissionRequest)) {
		t.Errorf("GET /permission listed %+v while the stream asked %+v", pending, ask.PermissionRequest)
	}

	var write *oc.ToolPart
	for _, tp := range v.tools {
		if tp.Tool == "write" {
			write = tp
		}
	}
	if write == nil || write.CallID != ask.Tool.CallID || write.State.Status != oc.ToolCompleted ||
		write.State.Title != "hello.txt" || write.State.Output != "Wrote file successfully." {
		t.Fatalf("write tool = %+v", write)
	}
	edited, n := lastOf[*oc.FileEdited](evs)
	if n != 1 || edited.File != "<workdir>/hello.txt" {
		t.Errorf("file.edited = %+v (%d)", edited, n)
	}
	patch, ok := v.lastParts[firstPartOfType(v, oc.PartPatch)].(*oc.PatchPart)
	if !ok || patch.Hash == "" || !reflect.DeepEqual(patch.Files, []string{"<workdir>/hello.txt"}) {
		t.Errorf("patch part = %+v", patch)
	}
	for id, p := range v.lastParts {
		if s, ok := p.(*oc.StepStartPart); ok && s.Snapshot == "" {
			t.Errorf("step-start %s without a snapshot", id)
		}
	}

	// The turn's diff: session.diff stays empty in this version; the user
	// message's summary has it, as GET /session/{id}/diff?messageID= does.
	for _, ev := range evs {
		if d, ok := ev.Payload.(*oc.SessionDiff); ok && len(d.Diff) != 0 {
			t.Errorf("session.diff carries %+v", d.Diff)
		}
	}
	var user *oc.Message
	for _, m := range v.messages {
		if m.Role == oc.RoleUser {
			user = m
		}
	}
	var byMessage []oc.FileDiff
	if err := json.Unmarshal(readCapture(t, "serve-session-diff-message.json"), &byMessage); err != nil {
		t.Fatal(err)
	}
	if user == nil || user.Summary == nil || len(user.Summary.Diffs) != 1 || !reflect.DeepEqual(user.Summary.Diffs, byMessage) {
		t.Fatalf("user summary %+v, GET diff %+v", user.Summary, byMessage)
	}
	if d := byMessage[0]; d.File != "hello.txt" || d.Status != oc.FileAdded || d.Additions != 1 || !strings.Contains(d.Patch, "+hello") {
		t.Errorf("diff = %+v", d)
	}
}

func firstPartOfType(v *turnView, typ string) string {
	for id, p := range v.lastParts {
		if p.Base().Type == typ {
			return id
		}
	}
	return ""
}

func TestGoldenTodoStream(t *testing.T) {
	evs := decodeCapture(t, "serve-event-todo.sse")
	todo, n := lastOf[*oc.TodoUpdated](evs)
	if n != 1 || len(todo.Todos) != 2 || todo.Todos[0] != (oc.Todo{Content: "write the plan", Status: "in_progress", Priority: "high"}) {
		t.Fatalf("todo.updated = %+v (%d)", todo, n)
	}
	var listed []oc.Todo
	if err := json.Unmarshal(readCapture(t, "serve-session-todo.json"), &listed); err != nil || !reflect.DeepEqual(listed, todo.Todos) {
		t.Errorf("GET todo %+v, %v; stream %+v", listed, err, todo.Todos)
	}
	v := view(t, evs)
	for _, tp := range v.tools {
		var meta struct{ Todos []oc.Todo }
		if err := json.Unmarshal(tp.State.Metadata, &meta); tp.Tool != "todowrite" || err != nil || !reflect.DeepEqual(meta.Todos, todo.Todos) {
			t.Errorf("tool %s metadata %s: %v", tp.Tool, tp.State.Metadata, err)
		}
	}
}

func TestGoldenRejectedPermission(t *testing.T) {
	evs := decodeCapture(t, "serve-event-reject.sse")
	v := view(t, evs)
	v.checkTextAssembles(t)
	reply, _ := lastOf[*oc.PermissionReplied](evs)
	ask, _ := lastOf[*oc.PermissionAsked](evs)
	if reply == nil || reply.Reply != oc.ReplyReject || reply.RequestID != ask.ID {
		t.Fatalf("permission.replied = %+v", reply)
	}
	var bash *oc.ToolPart
	for id, tp := range v.tools {
		bash = tp
		if got := strings.Join(v.toolStates[id], ","); got != "pending,running,error" {
			t.Errorf("states = %s", got)
		}
	}
	st := bash.State
	if st.Status != oc.ToolError || !strings.Contains(st.Error, "rejected") || !strings.Contains(st.Error, "not in this test") ||
		st.Time == nil || st.Time.End < st.Time.Start || st.Output != "" {
		t.Errorf("rejected tool state = %+v", st)
	}
	// The turn goes on: the model hears the refusal and answers.
	if v.idles != 1 || len(v.errs) != 0 || !strings.Contains(strings.Join(mapValues(v.finalText), ""), "rejected permission") {
		t.Errorf("idles %d, errors %v, text %v", v.idles, v.errs, v.finalText)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, s := range m {
		out = append(out, s)
	}
	return out
}

func TestGoldenReasoningStream(t *testing.T) {
	evs := decodeCapture(t, "serve-event-reason.sse")
	v := view(t, evs)
	v.checkTextAssembles(t) // reasoning deltas use field "text" too
	var reasoning, text []string
	for id, final := range v.finalText {
		switch v.lastParts[id].(type) {
		case *oc.ReasoningPart:
			reasoning = append(reasoning, final)
		case *oc.TextPart:
			text = append(text, final)
		}
	}
	if !reflect.DeepEqual(reasoning, []string{"let me think about it"}) || !reflect.DeepEqual(text, []string{"thought it through"}) {
		t.Errorf("reasoning %q, text %q", reasoning, text)
	}
}

func TestGoldenRetryThenAbort(t *testing.T) {
	evs := decodeCapture(t, "serve-event-retry.sse")
	v := view(t, evs)
	var attempts []int
	var next oc.Millis
	for _, ev := range evs {
		if s, ok := ev.Payload.(*oc.SessionStatusChanged); ok && s.Status.Type == oc.StatusRetry {
			// Backoff: each attempt is planned later than the one before.
			if s.Status.Message != "fake error 500" || s.Status.Next <= next {
				t.Errorf("retry status = %+v after next %d", s.Status, next)
			}
			attempts, next = append(attempts, s.Status.Attempt), s.Status.Next
		}
	}
	if !reflect.DeepEqual(attempts, []int{1, 2, 3}) {
		t.Errorf("attempts = %v", attempts)
	}
	var status map[string]oc.SessionStatus
	if err := json.Unmarshal(readCapture(t, "serve-session-status-retry.json"), &status); err != nil || len(status) != 1 {
		t.Fatalf("GET /session/status = %v, %v", status, err)
	}
	for id, s := range status {
		if !v.sessions[id] || s.Type != oc.StatusRetry || s.Attempt != 3 {
			t.Errorf("status of %s = %+v", id, s)
		}
	}
	// An abort while retrying ends the turn with no session.error and an
	// assistant message that completed with neither finish nor error.
	if v.idles != 1 || len(v.errs) != 0 || v.statuses[len(v.statuses)-1] != oc.StatusIdle {
		t.Errorf("idles %d errors %v statuses %v", v.idles, v.errs, v.statuses)
	}
	for _, m := range v.messages {
		if m.Role == oc.RoleAssistant && (m.Error != nil || m.Finish != "" || m.Time.Completed == 0) {
			t.Errorf("aborted retrying message = %+v", m)
		}
	}
}

// Error bodies the real server sent for bad requests.
func TestGoldenErrorBodies(t *testing.T) {
	sc := bufio.NewScanner(bytes.NewReader(readCapture(t, "serve-error-bodies.jsonl")))
	n := 0
	for sc.Scan() {
		var row struct {
			Request string
			Status  int
			Body    string
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		n++
		e := oc.ParseResponseError(row.Status, []byte(row.Body))
		if e.Kind() == "" || e.Text != "" {
			t.Errorf("%s: body %s not read as an error body: %+v", row.Request, row.Body, e)
		}
		if e.Kind() != "BadRequest" && e.Message() == "" {
			t.Errorf("%s: no message in %+v", row.Request, e)
		}
		var err error = e
		want := map[int]error{400: oc.ErrBadRequest, 404: oc.ErrNotFound}[row.Status]
		if !errors.Is(err, want) {
			t.Errorf("%s: %v is not %v", row.Request, err, want)
		}
	}
	if n < 5 {
		t.Fatalf("%d error bodies", n)
	}
}
