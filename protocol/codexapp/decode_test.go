package codexapp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetherhq/tether/protocol/codexapp"
)

// transcriptLine is one line of a capture of the real app-server: dir "<"
// is what the server printed, ">" what the client sent.
type transcriptLine struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

func readTranscript(t testing.TB, name string) []transcriptLine {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []transcriptLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l transcriptLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every line of the captures decodes, in both directions: the methods this
// package types get their payload, the rest keep their params; Raw is the
// line; results decode into the types of the requests they answer.
func TestDecodeTranscripts(t *testing.T) {
	for _, name := range transcripts(t) {
		sent := map[codexapp.ID]string{}
		typed := map[string]int{}
		for _, l := range readTranscript(t, name) {
			if l.Dir != "<" && l.Dir != ">" {
				continue
			}
			line := bytes.Clone(l.Msg)
			msg, err := codexapp.Decode(line)
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, line)
			}
			if !bytes.Equal(msg.Raw(), l.Msg) {
				t.Errorf("Raw %s, want %s", msg.Raw(), l.Msg)
			}
			switch m := msg.(type) {
			case *codexapp.Request:
				if l.Dir == ">" {
					sent[m.ID] = m.Method
				}
				if m.Payload != nil {
					typed[m.Method]++
					if m.Payload.Method() != m.Method {
						t.Errorf("payload of %s says %s", m.Method, m.Payload.Method())
					}
				}
			case *codexapp.Notification:
				if m.Payload != nil {
					typed[m.Method]++
					if m.Payload.Method() != m.Method {
						t.Errorf("payload of %s says %s", m.Method, m.Payload.Method())
					}
				}
				if l.Dir == "<" && m.EmittedAtMs == 0 {
					t.Errorf("%s without emittedAtMs", m.Method)
				}
			case *codexapp.Response:
				checkResult(t, sent[m.ID], m)
			}
		}
		for _, method := range []string{codexapp.MethodTurnStarted, codexapp.MethodTurnCompleted, codexapp.MethodItemStarted,
			codexapp.MethodItemCompleted, codexapp.MethodAgentMessageDelta, codexapp.MethodCommandApproval,
			codexapp.MethodServerRequestResolved, codexapp.MethodTokenUsageUpdated} {
			if typed[method] == 0 {
				t.Errorf("%s: no typed %s", name, method)
			}
		}
	}
}

// checkResult decodes a result as the type of its request's answer.
func checkResult(t *testing.T, method string, m *codexapp.Response) {
	t.Helper()
	var v any
	switch method {
	case codexapp.MethodThreadStart, codexapp.MethodThreadResume, codexapp.MethodThreadFork:
		v = new(codexapp.ThreadResponse)
	case codexapp.MethodTurnStart:
		v = new(codexapp.TurnStartResponse)
	case codexapp.MethodTurnSteer:
		v = new(codexapp.TurnSteerResponse)
	default:
		return
	}
	err := m.DecodeResult(v)
	var rpc *codexapp.RPCError
	switch {
	case m.Error != nil && !errors.As(err, &rpc):
		t.Errorf("%s error answer: %v", method, err)
	case m.Error == nil && err != nil:
		t.Errorf("%s result: %v\n%s", method, err, m.Raw())
	}
}

// What a driver reads of the items and notifications in the captures.
func TestDecodedFields(t *testing.T) {
	lines := readTranscript(t, "app-server-approval-interrupt.transcript.jsonl")
	var approval *codexapp.CommandApprovalParams
	var command *codexapp.ThreadItem
	var user string
	var usage codexapp.TokenUsage
	var resolved codexapp.ID
	for _, l := range lines {
		if l.Dir != "<" {
			continue
		}
		msg, err := codexapp.Decode(bytes.Clone(l.Msg))
		if err != nil {
			t.Fatal(err)
		}
		switch m := msg.(type) {
		case *codexapp.Request:
			if p, ok := m.Payload.(*codexapp.CommandApprovalParams); ok {
				approval = p
			}
		case *codexapp.Notification:
			switch p := m.Payload.(type) {
			case *codexapp.ItemNotification:
				if p.Item.Type == codexapp.ItemCommandExecution && p.Method() == codexapp.MethodItemCompleted {
					command = &p.Item
				}
				if p.Item.Type == codexapp.ItemUserMessage && user == "" {
					user = p.Item.UserText()
				}
			case *codexapp.TokenUsageUpdatedNotification:
				usage = p.TokenUsage.Total
			case *codexapp.ServerRequestResolvedNotification:
				resolved = p.RequestID
			}
		}
	}
	if approval == nil || approval.ItemID != "call_fake_12" || approval.Command != "/bin/bash -lc 'echo hello'" || approval.Cwd != "<workdir>" ||
		!approval.Offers(codexapp.DecisionAccept) || approval.Offers(codexapp.DecisionAcceptForSession) {
		t.Errorf("approval %+v", approval)
	}
	if command == nil || command.AggregatedOutput != "hello\n" || command.ExitCode == nil || *command.ExitCode != 0 ||
		command.Status != codexapp.StatusCompleted || len(command.Raw) == 0 {
		t.Errorf("command %+v", command)
	}
	if user != "please USE_SHELL" || usage.InputTokens != 40 || usage.OutputTokens != 16 || resolved != codexapp.IntID(0) {
		t.Errorf("user %q usage %+v resolved %s", user, usage, resolved)
	}
}

// Malformed input is a *DecodeError of exactly one kind, never a panic; a
// typed method's bad params still give the message, to answer it.
func TestDecodeErrors(t *testing.T) {
	kinds := []error{codexapp.ErrNotJSON, codexapp.ErrNotObject, codexapp.ErrNotMessage, codexapp.ErrBadEnvelope, codexapp.ErrBadParams}
	for line, want := range map[string]error{
		`not json`:                codexapp.ErrNotJSON,
		`{"method":"x"} trailing`: codexapp.ErrNotJSON,
		`[1]`:                     codexapp.ErrNotObject,
		`"s"`:                     codexapp.ErrNotObject,
		`{}`:                      codexapp.ErrNotMessage,
		`{"method":5}`:            codexapp.ErrBadEnvelope,
		`{"id":{},"method":"x"}`:  codexapp.ErrBadEnvelope,
		`{"id":1}`:                codexapp.ErrBadEnvelope,
		`{"id":1,"result":{},"error":{"code":1,"message":"m"}}`:                               codexapp.ErrBadEnvelope,
		`{"id":1,"error":{"code":"x","message":"m"}}`:                                         codexapp.ErrBadEnvelope,
		`{"method":"item/started","params":{"item":5}}`:                                       codexapp.ErrBadParams,
		`{"method":"turn/completed","params":{"turn":{}}}`:                                    codexapp.ErrBadParams,
		`{"method":"turn/completed"}`:                                                         codexapp.ErrBadParams,
		`{"id":3,"method":"item/commandExecution/requestApproval","params":{"threadId":"t"}}`: codexapp.ErrBadParams,
	} {
		msg, err := codexapp.Decode([]byte(line))
		var de *codexapp.DecodeError
		if !errors.As(err, &de) || !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", line, err, want)
			continue
		}
		for _, k := range kinds {
			if k != want && errors.Is(err, k) {
				t.Errorf("%s: matches %v too", line, k)
			}
		}
		if (want == codexapp.ErrBadParams) != (msg != nil) {
			t.Errorf("%s: message %v with %v", line, msg, err)
		}
	}
	msg, _ := codexapp.Decode([]byte(`{"id":3,"method":"item/commandExecution/requestApproval","params":{"threadId":"t"}}`))
	if req, ok := msg.(*codexapp.Request); !ok || req.ID != codexapp.IntID(3) || req.Payload != nil {
		t.Errorf("a request with bad params: %+v", msg)
	}
}

// Encoded lines decode back to what was encoded, ids byte for byte.
func TestEncodeRoundTrip(t *testing.T) {
	line, err := codexapp.EncodeCall(codexapp.StringID("req-1"), &codexapp.TurnInterruptParams{ThreadID: "t", TurnID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if string(line) != `{"id":"req-1","method":"turn/interrupt","params":{"threadId":"t","turnId":"u"}}` {
		t.Errorf("line %s", line)
	}
	msg, err := codexapp.Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	if req := msg.(*codexapp.Request); req.ID != codexapp.StringID("req-1") || req.Method != codexapp.MethodTurnInterrupt {
		t.Errorf("decoded %+v", req)
	}
	res, err := codexapp.EncodeResult(codexapp.IntID(0), codexapp.ApprovalResponse{Decision: codexapp.DecisionAccept})
	if err != nil || string(res) != `{"id":0,"result":{"decision":"accept"}}` {
		t.Errorf("result %s, %v", res, err)
	}
	if _, err := codexapp.EncodeCall(codexapp.ID{}, &codexapp.ThreadReadParams{ThreadID: "t"}); !errors.Is(err, codexapp.ErrNoID) {
		t.Errorf("a request without an id: %v", err)
	}
}

// A turn error's HTTP status, from either form of codexErrorInfo the
// 0.169.0 server sends.
func TestTurnErrorStatus(t *testing.T) {
	for info, want := range map[string]int{
		`"internalServerError"`:                                    500,
		`{"httpConnectionFailed":{"httpStatusCode":502}}`:          502,
		`{"responseTooManyFailedAttempts":{"httpStatusCode":429}}`: 429,
		`"other"`: 0,
		`null`:    0,
		``:        0,
	} {
		e := &codexapp.TurnError{Message: "m", CodexErrorInfo: json.RawMessage(info)}
		if got := e.HTTPStatus(); got != want {
			t.Errorf("%s: status %d, want %d", info, got, want)
		}
	}
	e := &codexapp.TurnError{CodexErrorInfo: json.RawMessage(`{"httpConnectionFailed":{"httpStatusCode":401}}`)}
	if e.Kind() != "httpConnectionFailed" {
		t.Errorf("kind %q", e.Kind())
	}
}

// The question requests decode to their params: request_user_input as the
// real app-server 0.169.0 sent it, and an MCP elicitation of the schema's
// form mode.
func TestDecodeQuestions(t *testing.T) {
	msg, err := codexapp.Decode([]byte(`{"method":"item/tool/requestUserInput","id":0,"params":{"threadId":"th","turnId":"tu","itemId":"call_fake_1",` +
		`"questions":[{"id":"db","header":"Database","question":"Which database?","isOther":true,"isSecret":false,"options":[{"label":"Postgres","description":"relational"},` +
		`{"label":"SQLite","description":"a file"}]}],"isBlocking":false,"autoResolutionMs":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := msg.(*codexapp.Request).Payload.(*codexapp.ToolRequestUserInputParams)
	if !ok || p.ItemID != "call_fake_1" || len(p.Questions) != 1 || !p.Questions[0].IsOther || len(p.Questions[0].Options) != 2 || p.Questions[0].Options[1].Label != "SQLite" {
		t.Errorf("requestUserInput %+v", msg)
	}
	msg, err = codexapp.Decode([]byte(`{"id":"e1","method":"mcpServer/elicitation/request","params":{"serverName":"db","threadId":"th","turnId":null,"mode":"form",` +
		`"message":"Pick","requestedSchema":{"type":"object","properties":{}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e, ok := msg.(*codexapp.Request).Payload.(*codexapp.McpElicitationParams)
	if !ok || e.ServerName != "db" || e.TurnID != nil || e.Mode != codexapp.ElicitationForm || len(e.RequestedSchema) == 0 {
		t.Errorf("elicitation %+v", msg)
	}
	if _, err := codexapp.Decode([]byte(`{"id":1,"method":"mcpServer/elicitation/request","params":{"threadId":"th"}}`)); !errors.Is(err, codexapp.ErrBadParams) {
		t.Errorf("an elicitation without its server: %v", err)
	}
}
