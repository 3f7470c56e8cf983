package opencode_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	oc "github.com/tetherhq/tether/protocol/opencode"
)

// Every path helper builds a path the document serves with the method its
// doc comment names, with each id in its own escaped segment.
func TestPathsAreTheDocumentsRoutes(t *testing.T) {
	o := loadOpenAPI(t)
	const ses, msg, req = "ses_1", "msg_2", "per_3"
	must := func(p string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		path, method string
	}{
		{oc.PathHealth, "get"},
		{oc.PathEvent, "get"},
		{oc.PathGlobalEvent, "get"},
		{oc.PathSessions, "post"},
		{oc.PathSessionStatus, "get"},
		{oc.PathPermissions, "get"},
		{oc.PathQuestions, "get"},
		{must(oc.SessionPath(ses)), "get"},
		{must(oc.SessionMessagesPath(ses)), "get"},
		{must(oc.SessionMessagesPath(ses)), "post"},
		{must(oc.SessionMessagePath(ses, msg)), "get"},
		{must(oc.SessionPromptAsyncPath(ses)), "post"},
		{must(oc.SessionAbortPath(ses)), "post"},
		{must(oc.SessionDiffPath(ses, "")), "get"},
		{must(oc.SessionForkPath(ses)), "post"},
		{must(oc.SessionRevertPath(ses)), "post"},
		{must(oc.SessionUnrevertPath(ses)), "post"},
		{must(oc.SessionTodoPath(ses)), "get"},
		{must(oc.SessionChildrenPath(ses)), "get"},
		{must(oc.PermissionReplyPath(req)), "post"},
		{must(oc.QuestionReplyPath(req)), "post"},
		{must(oc.QuestionRejectPath(req)), "post"},
	}
	paths := o.doc["paths"].(map[string]any)
	for _, c := range cases {
		template := c.path
		for _, sub := range []struct{ id, param string }{{ses, "{sessionID}"}, {msg, "{messageID}"}, {req, "{requestID}"}} {
			template = strings.ReplaceAll(template, "/"+sub.id, "/"+sub.param)
		}
		ops, ok := paths[template].(map[string]any)
		if !ok || ops[c.method] == nil {
			t.Errorf("%s %s (%s) is not in the document", strings.ToUpper(c.method), c.path, template)
		}
	}
}

func TestPathsEscapeAndCheckIDs(t *testing.T) {
	got, err := oc.SessionMessagePath("a/b?c#d e", "m%1")
	if err != nil || got != "/session/a%2Fb%3Fc%23d%20e/message/m%251" {
		t.Errorf("escaped path = %q, %v", got, err)
	}
	u, err := url.Parse("http://127.0.0.1:1" + got)
	if err != nil || u.Path != "/session/a/b?c#d e/message/m%1" || u.RawPath == "" {
		t.Errorf("the escaped path does not parse back to its ids: %+v, %v", u, err)
	}
	for _, bad := range []string{"", ".", ".."} {
		if _, err := oc.SessionPath(bad); !errors.Is(err, oc.ErrInvalidID) {
			t.Errorf("SessionPath(%q): %v", bad, err)
		}
		if _, err := oc.SessionMessagePath("ses_1", bad); !errors.Is(err, oc.ErrInvalidID) {
			t.Errorf("SessionMessagePath(_, %q): %v", bad, err)
		}
		if _, err := oc.PermissionReplyPath(bad); !errors.Is(err, oc.ErrInvalidID) {
			t.Errorf("PermissionReplyPath(%q): %v", bad, err)
		}
	}
	if p, _ := oc.SessionDiffPath("ses_1", "msg_&x"); p != "/session/ses_1/diff?messageID=msg_%26x" {
		t.Errorf("diff path = %q", p)
	}
	if p := oc.WithDirectory("/session/ses_1/diff?messageID=m", "/srv/a b"); p != "/session/ses_1/diff?messageID=m&directory=%2Fsrv%2Fa+b" {
		t.Errorf("WithDirectory = %q", p)
	}
	if p := oc.WithDirectory(oc.PathEvent, ""); p != oc.PathEvent {
		t.Errorf("WithDirectory without a directory = %q", p)
	}
}

func TestRequestBodiesMarshalAsTheServerTakesThem(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{oc.NewTextPrompt("say hi"), `{"parts":[{"type":"text","text":"say hi"}]}`},
		{oc.PromptRequest{Agent: "plan", Model: &oc.PromptModel{ProviderID: "fake", ModelID: "m"}, Parts: []oc.PartInput{
			oc.TextInput{Text: "x"}, oc.RawPartInput(`{"type":"file","mime":"text/plain","url":"file:///a"}`),
		}}, `{"model":{"providerID":"fake","modelID":"m"},"agent":"plan","parts":[{"type":"text","text":"x"},{"type":"file","mime":"text/plain","url":"file:///a"}]}`},
		{oc.CreateSessionRequest{}, `{}`},
		{oc.CreateSessionRequest{ParentID: "ses_1", Title: "t", Permission: []oc.PermissionRule{{Permission: "bash", Pattern: "*", Action: oc.ActionAsk}}},
			`{"parentID":"ses_1","title":"t","permission":[{"permission":"bash","pattern":"*","action":"ask"}]}`},
		{oc.PermissionReplyRequest{Reply: oc.ReplyOnce}, `{"reply":"once"}`},
		{oc.PermissionReplyRequest{Reply: oc.ReplyReject, Message: "not now"}, `{"reply":"reject","message":"not now"}`},
		{oc.ForkRequest{}, `{}`},
		{oc.RevertRequest{MessageID: "msg_1"}, `{"messageID":"msg_1"}`},
		{oc.QuestionReplyRequest{Answers: [][]string{{"Yes"}, {"a", "b"}}}, `{"answers":[["Yes"],["a","b"]]}`},
		{oc.AgentInput{Name: "general"}, `{"type":"agent","name":"general"}`},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("%T: %s, %v\n want %s", c.v, got, err, c.want)
		}
	}
	if _, err := json.Marshal(oc.PromptRequest{Parts: []oc.PartInput{oc.RawPartInput(`[1]`)}}); !errors.Is(err, oc.ErrNotObject) {
		t.Errorf("a raw part that is not an object: %v", err)
	}
	for r, valid := range map[oc.PermissionReply]bool{oc.ReplyOnce: true, oc.ReplyAlways: true, oc.ReplyReject: true, "allow": false, "": false} {
		if r.Valid() != valid {
			t.Errorf("%q.Valid() = %v", r, !valid)
		}
	}
}

func TestParseResponseError(t *testing.T) {
	cases := []struct {
		status    int
		body      string
		kind, msg string
		is, isNot error
	}{
		{404, `{"name":"NotFoundError","data":{"message":"Session not found: ses_x"}}`, "NotFoundError", "Session not found: ses_x", oc.ErrNotFound, oc.ErrSessionBusy},
		{409, `{"_tag":"SessionBusyError","sessionID":"ses_1","message":"Session ses_1 is busy"}`, "SessionBusyError", "Session ses_1 is busy", oc.ErrSessionBusy, oc.ErrNotFound},
		{400, `{"_tag":"InvalidRequestError","message":"Expected string","kind":"Body","field":"parts"}`, "InvalidRequestError", "Expected string", oc.ErrBadRequest, oc.ErrServer},
		{400, `{"name":"BadRequest","data":{"message":"bad json","kind":"Payload"}}`, "BadRequest", "bad json", oc.ErrBadRequest, oc.ErrNotFound},
		{502, `<html>bad gateway</html>`, "", "<html>bad gateway</html>", oc.ErrServer, oc.ErrBadRequest},
		{500, `{"unrelated":true}`, "", `{"unrelated":true}`, oc.ErrServer, oc.ErrSessionBusy},
	}
	for _, c := range cases {
		body := []byte(c.body)
		e := oc.ParseResponseError(c.status, body)
		for i := range body {
			body[i] = 'X' // the error must not alias the caller's buffer
		}
		if e.Kind() != c.kind || e.Message() != c.msg || e.StatusCode != c.status {
			t.Errorf("%s: kind %q message %q status %d", c.body, e.Kind(), e.Message(), e.StatusCode)
		}
		var err error = e
		if !errors.Is(err, c.is) || errors.Is(err, c.isNot) {
			t.Errorf("%s: Is(%v) = %v, Is(%v) = %v", c.body, c.is, errors.Is(err, c.is), c.isNot, errors.Is(err, c.isNot))
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: Error() = %q", c.body, err)
		}
	}
}

func TestMillisAcceptsAnyNumber(t *testing.T) {
	for in, want := range map[string]oc.Millis{
		`1795321911279`: 1795321911279, `1795321911279.6`: 1795321911279, `1.7e12`: 1700000000000, `null`: 0, `-5`: -5,
	} {
		var m oc.Millis
		if err := json.Unmarshal([]byte(in), &m); err != nil || m != want {
			t.Errorf("%s: %d, %v", in, m, err)
		}
	}
	for _, bad := range []string{`"1"`, `true`, `1e300`, `{}`} {
		var m oc.Millis
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("%s decoded to %d", bad, m)
		}
	}
	if got := oc.Millis(1795321911279).Time(); !got.Equal(time.UnixMilli(1795321911279)) || !oc.Millis(0).Time().IsZero() {
		t.Errorf("Time() = %v", got)
	}
}

func TestMessageSummaryHasTwoForms(t *testing.T) {
	for _, in := range []string{`true`, `false`, `{"title":"t","diffs":[{"file":"a","additions":1,"deletions":0}]}`, `{"diffs":[]}`} {
		var m oc.Message
		if err := json.Unmarshal([]byte(`{"id":"m","summary":`+in+`}`), &m); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if m.Summary == nil || m.Summary.Compaction != (in == "true") {
			t.Errorf("%s: %+v", in, m.Summary)
		}
		out, err := json.Marshal(m.Summary)
		if err != nil || string(out) != in {
			t.Errorf("%s marshals back to %s, %v", in, out, err)
		}
	}
	if out, _ := json.Marshal(oc.MessageSummary{Compaction: true}); string(out) != "true" {
		t.Errorf("a compaction summary marshals to %s", out)
	}
}

func TestNamedErrorDescribesItself(t *testing.T) {
	var e oc.NamedError
	raw := `{"name":"APIError","data":{"message":"Overloaded","statusCode":529,"isRetryable":true,"extra":1}}`
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		t.Fatal(err)
	}
	if e.Error() != "opencode: APIError 529: Overloaded" || e.Aborted() || !e.Data.IsRetryable || string(e.Raw) != raw {
		t.Errorf("%q aborted=%v %+v", e.Error(), e.Aborted(), e)
	}
	var none *oc.NamedError
	if none.Aborted() {
		t.Error("a nil error is not an abort")
	}
}
