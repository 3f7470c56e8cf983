package claudecode_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	cc "github.com/tetherhq/tether/protocol/claudecode"
)

func TestParseRejectsNonObjects(t *testing.T) {
	for _, line := range []string{"null", "42", `"a string"`, "[1,2,3]", "plain text", `{"type":"assistant", truncated`, "\x1b[31mlog\x1b[0m"} {
		_, err := cc.Parse([]byte(line))
		var pe *cc.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) err = %v, want *ParseError", line, err)
		}
	}
}

func TestParseKeepsUnknownTypesAndBlocks(t *testing.T) {
	m, err := cc.Parse([]byte(`{"type":"bogus_future_type","x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	u, ok := m.(*cc.Unknown)
	if !ok || u.Type() != "bogus_future_type" || string(u.Fields["x"]) != "1" {
		t.Fatalf("got %#v", m)
	}
	m, err = cc.Parse([]byte(`{"type":"assistant","message":{"id":"m","role":"assistant","model":"x","content":[{"type":"text","text":"a"},{"type":"web_search_tool_result","tool_use_id":"t","content":[]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	blocks := m.(*cc.AssistantMessage).Message.Content
	ub, ok := blocks[1].(cc.UnknownBlock)
	if !ok || ub.Type != "web_search_tool_result" || !json.Valid(ub.Raw) {
		t.Fatalf("blocks = %#v", blocks)
	}
	if m, err := cc.Parse([]byte(`{}`)); err != nil || m.Type() != "" {
		t.Fatalf("{} -> %v, %v", m, err)
	}
}

func TestParseTypeKeyAnywhere(t *testing.T) {
	// The CLI writes result lines with "type" near the end.
	m, err := cc.Parse([]byte(`{"subtype":"success","nested":{"type":"x"},"is_error":false,"result":"ok","type":"result"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.(*cc.ResultMessage); !ok || r.Result != "ok" {
		t.Fatalf("got %#v", m)
	}
	m, err = cc.Parse([]byte(`{"typ\u0065":"result","result":"escaped key"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.(*cc.ResultMessage); !ok || r.Result != "escaped key" {
		t.Fatalf("escaped key: got %#v", m)
	}
}

func TestUserContentStringOrBlocks(t *testing.T) {
	m, err := cc.Parse([]byte(`{"type":"user","message":{"role":"user","content":"hi"}}`))
	if err != nil || m.(*cc.UserMessage).Message.Content.Text() != "hi" {
		t.Fatalf("string content: %v %#v", err, m)
	}
	m, err = cc.Parse([]byte(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"out"}],"is_error":true}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	tr := m.(*cc.UserMessage).Message.Content[0].(cc.ToolResultBlock)
	if tr.ToolUseID != "t1" || !tr.IsError || tr.ContentText() != "out" {
		t.Fatalf("tool result = %#v", tr)
	}
}

func TestEncodeControlRequestShapes(t *testing.T) {
	model := "claude-sonnet-4-5"
	cases := []struct {
		req  cc.OutboundRequest
		want string
	}{
		{cc.InitializeRequest{}, `{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","hooks":null}}`},
		{cc.InterruptRequest{}, `{"type":"control_request","request_id":"r1","request":{"subtype":"interrupt"}}`},
		{cc.SetModelRequest{Model: &model}, `{"type":"control_request","request_id":"r1","request":{"subtype":"set_model","model":"claude-sonnet-4-5"}}`},
		{cc.SetPermissionModeRequest{Mode: "acceptEdits"}, `{"type":"control_request","request_id":"r1","request":{"subtype":"set_permission_mode","mode":"acceptEdits"}}`},
		{cc.MCPStatusRequest{}, `{"type":"control_request","request_id":"r1","request":{"subtype":"mcp_status"}}`},
		{cc.RewindFilesRequest{UserMessageID: "u1", DryRun: true}, `{"type":"control_request","request_id":"r1","request":{"subtype":"rewind_files","user_message_id":"u1","dry_run":true}}`},
		{cc.MCPToggleRequest{ServerName: "calc"}, `{"type":"control_request","request_id":"r1","request":{"subtype":"mcp_toggle","serverName":"calc","enabled":false}}`},
		{cc.GenericRequest{Name: "end_session"}, `{"type":"control_request","request_id":"r1","request":{"subtype":"end_session"}}`},
	}
	for _, c := range cases {
		got, err := cc.EncodeControlRequest("r1", c.req)
		if err != nil || string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s (%v)", c.req.Subtype(), got, c.want, err)
		}
	}
}

func TestEncodeResponsesRoundTrip(t *testing.T) {
	line, err := cc.EncodeControlSuccess("abc", cc.PermissionResponse{Behavior: "allow", UpdatedInput: json.RawMessage(`{"a":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"control_response","response":{"subtype":"success","request_id":"abc","response":{"behavior":"allow","updatedInput":{"a":1}}}}`
	if string(line) != want {
		t.Fatalf("got %s", line)
	}
	line, _ = cc.EncodeControlError("abc", "nope")
	m, err := cc.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	if r := m.(*cc.ControlResponse); r.Response.Subtype != "error" || r.Response.Error != "nope" || r.Response.RequestID != "abc" {
		t.Fatalf("got %+v", r.Response)
	}
}

func TestEncodeUserInput(t *testing.T) {
	line, err := cc.EncodeUserInput(cc.UserInput{Content: cc.Content{cc.TextBlock{Text: "say hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"user","message":{"content":"say hi","role":"user"},"parent_tool_use_id":null,"session_id":"default"}`
	if string(line) != want {
		t.Fatalf("got %s", line)
	}
	line, _ = cc.EncodeUserInput(cc.UserInput{Content: cc.Content{cc.TextBlock{Text: "a"}, cc.UnknownBlock{Type: "image", Raw: json.RawMessage(`{"type":"image","source":{}}`)}}})
	if !strings.Contains(string(line), `"content":[{"type":"text","text":"a"},{"type":"image","source":{}}]`) {
		t.Fatalf("got %s", line)
	}
}

func TestRequestIDsAreUnique(t *testing.T) {
	var g cc.RequestIDs
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := g.Next()
		if seen[id] || !strings.HasPrefix(id, "req_") {
			t.Fatalf("bad id %q", id)
		}
		seen[id] = true
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}`,
		`{"type":"control_request","request_id":"1","request":{"subtype":"can_use_tool"}}`,
		`{"type":"result","subtype":"success"}`, `{"a":"\"type\"","type":"user"}`, `null`, `{"type":`,
		`{"type":"user","message":{"content":"s"}}`, `{"type":"control_response","response":{"subtype":"error"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := cc.Parse(line)
		// The reader's path, ParseAs after PeekType, must agree with Parse.
		if m2, err2 := cc.ParseAs(cc.PeekType(line), line); (err == nil) != (err2 == nil) ||
			err == nil && m.Type() != m2.Type() {
			t.Fatalf("Parse: %v, %v; ParseAs: %v, %v", m, err, m2, err2)
		}
		if err != nil {
			if !cc.IsParseError(err) {
				t.Fatalf("error is not a ParseError: %v", err)
			}
			return
		}
		if !json.Valid(line) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &probe) == nil && probe.Type != m.Type() {
			t.Fatalf("type %q, encoding/json says %q", m.Type(), probe.Type)
		}
		// Aliased text must equal what a plain decode gives.
		if a, ok := m.(*cc.AssistantMessage); ok {
			var plain struct {
				Message struct {
					Content []struct {
						Type string `json:"type"`
						Text string `json:"text"`
					} `json:"content"`
				} `json:"message"`
			}
			if json.Unmarshal(line, &plain) == nil {
				var want strings.Builder
				for _, b := range plain.Message.Content {
					if b.Type == "text" {
						want.WriteString(b.Text)
					}
				}
				if got := a.Message.Content.Text(); got != want.String() {
					t.Fatalf("text %q, encoding/json says %q", got, want.String())
				}
			}
		}
	})
}
