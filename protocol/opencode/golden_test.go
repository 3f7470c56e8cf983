package opencode_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	oc "github.com/tetherhq/tether/protocol/opencode"
)

// The captures in testdata come from a real `opencode serve` 1.18.33
// driven against a fake model server: one turn answered with text then a
// turn with a bash call (basic), a bash call that asked for permission
// (permission), and a slow answer aborted mid-stream (abort).

func readTestdata(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", name))
}

func readCapture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := readTestdata(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dataLines is every "data: " line of a capture, found without the
// package's reader: what the reader must return, in order.
func dataLines(t *testing.T, capture []byte) [][]byte {
	t.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(capture))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			out = append(out, append([]byte(nil), rest...))
		}
	}
	return out
}

// decodeCapture reads a capture with EventReader and checks what holds for
// every event: one per data line, the exact bytes kept, no error, no type
// left unknown.
func decodeCapture(t *testing.T, name string) []*oc.Event {
	t.Helper()
	capture := readCapture(t, name)
	want := dataLines(t, capture)
	r := oc.NewEventReader(bytes.NewReader(capture), 0)
	var evs []*oc.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s event %d: %v", name, len(evs)+1, err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != len(want) || len(evs) < 20 {
		t.Fatalf("%s: %d events for %d data lines", name, len(evs), len(want))
	}
	for i, ev := range evs {
		if !bytes.Equal(ev.Raw(), want[i]) {
			t.Fatalf("%s event %d: Raw is not the exact data line", name, i+1)
		}
		if _, unknown := ev.Payload.(*oc.Unknown); unknown && !leftUnknown(ev.Type) {
			t.Errorf("%s event %d: type %q left unknown", name, i+1, ev.Type)
		}
		if !strings.HasPrefix(ev.ID, "evt_") || ev.Type == "" {
			t.Errorf("%s event %d: id %q type %q", name, i+1, ev.ID, ev.Type)
		}
		if ev.Payload.EventType() != ev.Type {
			t.Errorf("%s event %d: %T is for %q, event is %q", name, i+1, ev.Payload, ev.Payload.EventType(), ev.Type)
		}
		var env struct {
			Properties json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(want[i], &env); err != nil || !bytes.Equal(ev.Properties, env.Properties) {
			t.Errorf("%s event %d: Properties is not the exact properties object", name, i+1)
		}
	}
	return evs
}

// turnView is what a driver reads from a stream: text assembled from
// deltas, tool states in order, statuses, permission requests.
type turnView struct {
	sessions    map[string]bool
	text        map[string]*strings.Builder // part id → text from deltas
	finalText   map[string]string           // part id → text of its finished part.updated
	toolStates  map[string][]string         // part id → statuses in order
	tools       map[string]*oc.ToolPart     // part id → last state
	messages    map[string]*oc.Message      // message id → last info
	statuses    []string
	idles       int
	errs        []*oc.SessionError
	asked       []*oc.PermissionAsked
	replied     []*oc.PermissionReplied
	noise       int
	order       []string // event types, noise left out
	lastParts   map[string]oc.Part
	stepFinish  []*oc.StepFinishPart
	partsByType map[string]int
}

func view(t *testing.T, evs []*oc.Event) *turnView {
	t.Helper()
	v := &turnView{
		sessions: map[string]bool{}, text: map[string]*strings.Builder{}, finalText: map[string]string{},
		toolStates: map[string][]string{}, tools: map[string]*oc.ToolPart{}, messages: map[string]*oc.Message{},
		lastParts: map[string]oc.Part{}, partsByType: map[string]int{},
	}
	for _, ev := range evs {
		if ev.IsNoise() {
			v.noise++
			if ev.SessionID() != "" {
				t.Errorf("noise event %s names a session", ev.Type)
			}
			continue
		}
		v.order = append(v.order, ev.Type)
		if id := ev.SessionID(); id != "" {
			v.sessions[id] = true
		}
		switch p := ev.Payload.(type) {
		case *oc.MessagePartUpdated:
			b := p.Part.Base()
			v.lastParts[b.ID] = p.Part
			v.partsByType[b.Type]++
			switch part := p.Part.(type) {
			case *oc.TextPart:
				if part.Time != nil && part.Time.End != 0 {
					v.finalText[b.ID] = part.Text
				} else if part.Time != nil {
					v.text[b.ID] = &strings.Builder{}
					v.text[b.ID].WriteString(part.Text)
				}
			case *oc.ReasoningPart:
				if part.Time.End != 0 {
					v.finalText[b.ID] = part.Text
				} else {
					v.text[b.ID] = &strings.Builder{}
					v.text[b.ID].WriteString(part.Text)
				}
			case *oc.ToolPart:
				v.toolStates[b.ID] = append(v.toolStates[b.ID], part.State.Status)
				v.tools[b.ID] = part
			case *oc.StepFinishPart:
				v.stepFinish = append(v.stepFinish, part)
			}
		case *oc.MessagePartDelta:
			sb, ok := v.text[p.PartID]
			if !ok || p.Field != "text" {
				t.Fatalf("delta for part %s field %q before its part was announced", p.PartID, p.Field)
			}
			sb.WriteString(p.Delta)
		case *oc.MessageUpdated:
			info := p.Info
			v.messages[info.ID] = &info
		case *oc.SessionStatusChanged:
			v.statuses = append(v.statuses, p.Status.Type)
		case *oc.SessionIdle:
			v.idles++
		case *oc.SessionError:
			v.errs = append(v.errs, p)
		case *oc.PermissionAsked:
			v.asked = append(v.asked, p)
		case *oc.PermissionReplied:
			v.replied = append(v.replied, p)
		}
	}
	return v
}

// checkTextAssembles holds every streamed text part to its finished form:
// the deltas add up to the text the final part.updated carries.
func (v *turnView) checkTextAssembles(t *testing.T) {
	t.Helper()
	if len(v.text) == 0 {
		t.Fatal("no streamed text part")
	}
	for id, sb := range v.text {
		final, ok := v.finalText[id]
		if !ok {
			t.Errorf("text part %s never finished", id)
			continue
		}
		if sb.String() != final {
			t.Errorf("text part %s: deltas give %q, finished part says %q", id, sb.String(), final)
		}
	}
}

func TestGoldenBasicStream(t *testing.T) {
	evs := decodeCapture(t, "serve-event-basic.sse")
	v := view(t, evs)
	const session = "ses_dfe79a834ffejhBErzxOqoB3Zv"

	if evs[0].Type != oc.EventServerConnected || evs[len(evs)-1].Type != oc.EventServerHeartbeat {
		t.Errorf("stream starts with %s and ends with %s", evs[0].Type, evs[len(evs)-1].Type)
	}
	if len(v.sessions) != 1 || !v.sessions[session] {
		t.Errorf("sessions = %v, want only %s", v.sessions, session)
	}
	if want := bytes.Count(readCapture(t, "serve-event-basic.sse"), []byte(`"type":"plugin.added"`)); v.noise < want || want < 40 {
		t.Errorf("noise events = %d, plugin.added alone = %d", v.noise, want)
	}
	created := evs[1].Payload.(*oc.SessionCreated)
	if created.Info.ID != session || created.Info.Title != "probe" || created.Info.Version != "1.18.33" || created.Info.Time.Created == 0 {
		t.Errorf("session.created info = %+v", created.Info)
	}

	v.checkTextAssembles(t)
	if got := v.finalText["prt_201865ae1001CnA7dK00hEu9o4"]; got != "hi there from fake openai" {
		t.Errorf("first answer = %q", got)
	}
	if got := v.finalText["prt_201865c29001zGYSFYzWMZ6f8u"]; got != "tool said: hello\n" {
		t.Errorf("second answer = %q", got)
	}

	const toolPart = "prt_201865b730010huCTQ38TbxGyY"
	if got := strings.Join(v.toolStates[toolPart], ","); got != "pending,running,running,running,completed" {
		t.Errorf("tool states = %s", got)
	}
	tool := v.tools[toolPart]
	var input struct{ Command string }
	var meta struct {
		Output string
		Exit   int
	}
	if err := json.Unmarshal(tool.State.Input, &input); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(tool.State.Metadata, &meta); err != nil {
		t.Fatal(err)
	}
	if tool.Tool != "bash" || tool.CallID != "call_fake_6" || tool.MessageID != "msg_201865b45001UN3c9I0tDzLlQP" ||
		tool.State.Output != "hello\n" || tool.State.Title != "echo hello" || input.Command != "echo hello" ||
		meta.Output != "hello\n" || meta.Exit != 0 || tool.State.Time == nil || tool.State.Time.End < tool.State.Time.Start {
		t.Errorf("completed tool = %+v state %+v", tool, tool.State)
	}

	user, answer := v.messages["msg_2018657ef001um769jQF4b7IrS"], v.messages["msg_2018658170011g0eD8NfDOd89i"]
	if user.Role != oc.RoleUser || user.Model == nil || user.Model.ModelID != "fake-model" || user.Summary == nil || user.Summary.Compaction {
		t.Errorf("user message = %+v", user)
	}
	if answer.Role != oc.RoleAssistant || answer.ParentID != user.ID || answer.Finish != "stop" || answer.Error != nil ||
		answer.Tokens == nil || answer.Tokens.Total != 28 || answer.Time.Completed < answer.Time.Created || answer.ProviderID != "fake" {
		t.Errorf("assistant message = %+v", answer)
	}
	if toolMsg := v.messages["msg_201865b45001UN3c9I0tDzLlQP"]; toolMsg.Finish != "tool-calls" {
		t.Errorf("tool step message finish = %q", toolMsg.Finish)
	}
	if len(v.stepFinish) != 3 || v.stepFinish[1].Reason != "tool-calls" || v.stepFinish[2].Reason != "stop" || v.stepFinish[0].Tokens.Input != 20 {
		t.Errorf("step-finish parts = %+v", v.stepFinish)
	}

	// Two turns, each ending busy → idle → session.idle.
	if v.idles != 2 || v.statuses[len(v.statuses)-1] != oc.StatusIdle {
		t.Errorf("statuses %v, %d idles", v.statuses, v.idles)
	}
	for i, s := range v.statuses {
		if s == oc.StatusIdle && (i == 0 || v.statuses[i-1] != oc.StatusBusy) {
			t.Errorf("idle at %d not after busy: %v", i, v.statuses)
		}
	}
	for i, typ := range v.order {
		if typ == oc.EventSessionIdle && v.order[i-1] != oc.EventSessionStatus {
			t.Errorf("session.idle at %d follows %s, not session.status", i, v.order[i-1])
		}
	}
}

func TestGoldenPermissionStream(t *testing.T) {
	evs := decodeCapture(t, "serve-event-permission.sse")
	v := view(t, evs)
	v.checkTextAssembles(t)

	if len(v.asked) != 1 || len(v.replied) != 1 {
		t.Fatalf("asked %d, replied %d", len(v.asked), len(v.replied))
	}
	ask, reply := v.asked[0], v.replied[0]
	if ask.ID != "per_20186c58e001cHTnko7ydfJVp0" || ask.Permission != "bash" ||
		!reflect.DeepEqual(ask.Patterns, []string{"echo hello"}) || !reflect.DeepEqual(ask.Always, []string{"echo *"}) || ask.Tool == nil {
		t.Fatalf("permission.asked = %+v", ask)
	}
	var meta struct{ Command string }
	if err := json.Unmarshal(ask.Metadata, &meta); err != nil || meta.Command != "echo hello" {
		t.Errorf("permission metadata %s: %v", ask.Metadata, err)
	}
	if reply.RequestID != ask.ID || reply.Reply != oc.ReplyOnce || reply.SessionID != ask.SessionID {
		t.Errorf("permission.replied = %+v", reply)
	}

	// The request names the tool call a driver has already seen running,
	// and the call completes only after the reply.
	var tool *oc.ToolPart
	for _, part := range v.tools {
		if part.CallID == ask.Tool.CallID {
			tool = part
		}
	}
	if tool == nil || tool.MessageID != ask.Tool.MessageID || tool.SessionID != ask.SessionID {
		t.Fatalf("no tool part with call %s in message %s", ask.Tool.CallID, ask.Tool.MessageID)
	}
	var states []string
	for _, ev := range evs {
		switch p := ev.Payload.(type) {
		case *oc.PermissionAsked:
			states = append(states, "asked")
		case *oc.PermissionReplied:
			states = append(states, "replied")
		case *oc.MessagePartUpdated:
			if tp, ok := p.Part.(*oc.ToolPart); ok && tp.CallID == ask.Tool.CallID {
				states = append(states, tp.State.Status)
			}
		}
	}
	if got := strings.Join(states, ","); got != "pending,running,asked,replied,running,running,completed" {
		t.Errorf("tool and permission order = %s", got)
	}
}

func TestGoldenAbortStream(t *testing.T) {
	evs := decodeCapture(t, "serve-event-abort.sse")
	v := view(t, evs)
	v.checkTextAssembles(t)
	const session = "ses_dfe78dc21ffe0OYNF25MaDnDBi"

	if len(v.errs) != 1 {
		t.Fatalf("session.error events = %d", len(v.errs))
	}
	se := v.errs[0]
	if se.SessionID != session || se.Error == nil || !se.Error.Aborted() || se.Error.Data.Message != "Aborted" {
		t.Fatalf("session.error = %+v", se)
	}
	var asErr error = se.Error
	if !strings.Contains(asErr.Error(), "MessageAbortedError") {
		t.Errorf("error text %q", asErr)
	}
	answer := v.messages["msg_201872404001odFlAHIrm3ekO5"]
	if answer.Error == nil || !answer.Error.Aborted() || answer.Finish != "" || answer.Time.Completed == 0 {
		t.Errorf("aborted message = %+v", answer)
	}
	if got := v.finalText["prt_2018724460010a0qKOKxFxVvVJ"]; got != "tick tick tick tick tick " {
		t.Errorf("text so far = %q", got)
	}
	// The abort ends the turn: error, then idle.
	i := slicesIndex(v.order, oc.EventSessionError)
	if i < 0 || slicesIndex(v.order[i:], oc.EventSessionIdle) < 0 || v.idles < 1 {
		t.Errorf("no session.idle after the abort: %v", v.order)
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// canonical re-encodes v and decodes it as plain JSON, so values that came
// from differently ordered objects compare equal.
func canonical(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	// Numbers stay text: 1E700 is valid JSON, not a float64.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// GET /session/{id}/message after the basic stream's turns holds exactly
// what the stream last said about each message and part: a driver that
// rehydrates after a reconnect sees the same state.
func TestGoldenMessagesMatchTheStream(t *testing.T) {
	if parts := messagesMatchStream(t, "serve-session-messages.json", "serve-event-basic.sse", "uauaa"); parts != 11 {
		t.Errorf("%d parts listed", parts)
	}
	if parts := messagesMatchStream(t, "serve-session-messages-write.json", "serve-event-write.sse", "uaa"); parts != 8 {
		t.Errorf("%d parts listed", parts)
	}
}

// messagesMatchStream holds a GET /session/{id}/message answer to the last
// word of a stream on each message and part, and returns how many parts it
// listed.
func messagesMatchStream(t *testing.T, messagesFile, streamFile, wantRoles string) int {
	t.Helper()
	var msgs []oc.MessageWithParts
	if err := json.Unmarshal(readCapture(t, messagesFile), &msgs); err != nil {
		t.Fatal(err)
	}
	roles := ""
	for _, m := range msgs {
		roles += m.Info.Role[:1]
	}
	if roles != wantRoles {
		t.Fatalf("%s: roles = %s", messagesFile, roles)
	}
	v := view(t, decodeCapture(t, streamFile))
	parts := 0
	for _, m := range msgs {
		streamed, ok := v.messages[m.Info.ID]
		if !ok {
			t.Fatalf("message %s not in the stream", m.Info.ID)
		}
		if !reflect.DeepEqual(canonical(t, m.Info), canonical(t, streamed)) {
			t.Errorf("message %s: listed %+v, streamed %+v", m.Info.ID, m.Info, streamed)
		}
		for _, p := range m.Parts {
			parts++
			b := p.Base()
			if b.MessageID != m.Info.ID || b.SessionID != m.Info.SessionID {
				t.Errorf("part %s is filed under %s/%s", b.ID, b.SessionID, b.MessageID)
			}
			if !reflect.DeepEqual(canonical(t, p), canonical(t, v.lastParts[b.ID])) {
				t.Errorf("part %s: listed %+v, streamed %+v", b.ID, p, v.lastParts[b.ID])
			}
		}
	}
	return parts
}

func TestGoldenResponseBodies(t *testing.T) {
	var s oc.Session
	if err := json.Unmarshal(readCapture(t, "serve-session-create.json"), &s); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.ID, "ses_") || s.Title != "probe" || s.Slug == "" || s.Time.Created == 0 || s.Tokens == nil || s.ParentID != "" {
		t.Errorf("created session = %+v", s)
	}

	var m oc.MessageWithParts
	if err := json.Unmarshal(readCapture(t, "serve-message-sync.json"), &m); err != nil {
		t.Fatal(err)
	}
	if m.Info.Role != oc.RoleAssistant || m.Info.SessionID != s.ID || m.Info.Finish != "stop" || len(m.Parts) != 3 {
		t.Fatalf("sync answer = %+v", m)
	}
	types := []string{}
	for _, p := range m.Parts {
		types = append(types, p.Base().Type)
	}
	if strings.Join(types, ",") != "step-start,text,step-finish" {
		t.Errorf("part types = %v", types)
	}
	if text, ok := m.Parts[1].(*oc.TextPart); !ok || text.Text != "hi there from fake openai" {
		t.Errorf("text part = %+v", m.Parts[1])
	}
}

// `opencode run --format json` prints the same parts, one per line, and an
// APIError when the model API fails.
func TestGoldenRunOutputParts(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "run-*.stdout.jsonl"))
	if len(files) != 4 {
		t.Fatalf("run captures: %v", files)
	}
	seen := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var l struct {
				Type      string          `json:"type"`
				SessionID string          `json:"sessionID"`
				Part      json.RawMessage `json:"part"`
				Error     *oc.NamedError  `json:"error"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				t.Fatal(err)
			}
			if l.Type == "error" {
				e := l.Error
				var headers map[string]string = e.Data.ResponseHeaders
				if e.Name != oc.ErrorNameAPI || e.Data.StatusCode != 400 || e.Data.IsRetryable || headers["content-type"] != "application/json" ||
					!strings.Contains(e.Error(), "400") || !strings.Contains(e.Data.ResponseBody, "fake error 400") || e.Aborted() {
					t.Errorf("error line = %+v", e)
				}
				seen["error"]++
				continue
			}
			p, err := oc.DecodePart(l.Part)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if _, unknown := p.(*oc.UnknownPart); unknown || p.Base().SessionID != l.SessionID {
				t.Errorf("%s: part %+v", f, p)
			}
			seen[p.Base().Type]++
		}
	}
	if seen["error"] != 1 || seen[oc.PartTool] != 1 || seen[oc.PartText] < 3 || seen[oc.PartStepStart] != seen[oc.PartStepFinish] {
		t.Errorf("seen = %v", seen)
	}
}

func TestDecodeEventKeepsUnknownTypes(t *testing.T) {
	for _, data := range []string{
		`{"id":"evt_1","type":"session.next.text.delta","properties":{"sessionID":"ses_1","delta":"x"}}`,
		`{"type":"pty.created","properties":{"info":{"id":"pty_1"}}}`,
		`{"type":"brand.new"}`,
	} {
		ev, err := oc.DecodeEvent([]byte(data))
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		u, ok := ev.Payload.(*oc.Unknown)
		if !ok || u.Type != ev.Type || string(ev.Raw()) != data {
			t.Fatalf("%s: payload %#v", data, ev.Payload)
		}
		if strings.Contains(data, "ses_1") != (ev.SessionID() == "ses_1") {
			t.Errorf("%s: SessionID() = %q", data, ev.SessionID())
		}
		if strings.Contains(data, `"properties"`) && !bytes.Contains([]byte(data), u.Properties) {
			t.Errorf("%s: unknown properties %s", data, u.Properties)
		}
	}
}

func TestDecodeEventKeepsUnknownParts(t *testing.T) {
	data := `{"id":"evt_1","type":"message.part.updated","properties":{"sessionID":"ses_1","time":1,` +
		`"part":{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"hologram","beam":[1,2]}}}`
	ev, err := oc.DecodeEvent([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	u, ok := ev.Payload.(*oc.MessagePartUpdated).Part.(*oc.UnknownPart)
	if !ok || u.Type != "hologram" || u.ID != "prt_1" || !strings.Contains(string(u.Raw), `"beam":[1,2]`) {
		t.Fatalf("part = %#v", ev.Payload.(*oc.MessagePartUpdated).Part)
	}
	again, err := json.Marshal(u)
	if err != nil || !bytes.Equal(again, u.Raw) {
		t.Errorf("an unknown part marshals back to %s, %v", again, err)
	}
}

func TestDecodeEventRefusesMalformedData(t *testing.T) {
	cases := map[string]error{
		`null`:           oc.ErrNotObject,
		`[1]`:            oc.ErrNotObject,
		`"text"`:         oc.ErrNotObject,
		`{"id":"evt_1"}`: oc.ErrMissingField,
		`{"type":"session.idle","properties":[]}`:                                                                          oc.ErrNotObject,
		`{"type":"session.idle","properties":{}}`:                                                                          oc.ErrMissingField,
		`{"type":"message.part.delta","properties":{"sessionID":"s","messageID":"m","field":"text"}}`:                      oc.ErrMissingField,
		`{"type":"message.part.updated","properties":{"sessionID":"s","part":null}}`:                                       oc.ErrMissingField,
		`{"type":"message.part.updated","properties":{"sessionID":"s","part":7}}`:                                          oc.ErrNotObject,
		`{"type":"session.status","properties":{"sessionID":"s","status":"busy"}}`:                                         nil,
		`{"type":"message.updated","properties":{"sessionID":"s","info":{"id":"m","role":"user","time":{"created":"x"}}}}`: nil,
		`{"type":"server.connected"} trailing`:                                                                             nil,
		`{"type":`:                                                                                                         nil,
	}
	for data, wantErr := range cases {
		_, err := oc.DecodeEvent([]byte(data))
		var de *oc.DecodeError
		if !errors.As(err, &de) || !errors.Is(err, oc.ErrSkipped) {
			t.Errorf("%s: err %v, want a *DecodeError", data, err)
			continue
		}
		if wantErr != nil && !errors.Is(err, wantErr) {
			t.Errorf("%s: err %v, want %v", data, err, wantErr)
		}
	}
}

func TestNewEventRoundTrips(t *testing.T) {
	payloads := []oc.Payload{
		&oc.SessionIdle{SessionID: "ses_1"},
		&oc.MessagePartDelta{SessionID: "ses_1", MessageID: "msg_1", PartID: "prt_1", Field: "text", Delta: "hé\n"},
		&oc.MessagePartUpdated{SessionID: "ses_1", Time: 5, Part: &oc.ToolPart{
			PartBase: oc.PartBase{ID: "prt_2", SessionID: "ses_1", MessageID: "msg_1", Type: oc.PartTool},
			CallID:   "call_1", Tool: "bash",
			State: oc.ToolState{Status: oc.ToolError, Input: json.RawMessage(`{"command":"false"}`), Error: "exit 1",
				Time: &oc.ToolTime{Start: 1, End: 2}},
		}},
		&oc.PermissionAsked{PermissionRequest: oc.PermissionRequest{ID: "per_1", SessionID: "ses_1", Permission: "edit",
			Patterns: []string{"a.go"}, Metadata: json.RawMessage(`{}`), Always: []string{"*"}}},
		&oc.SessionStatusChanged{SessionID: "ses_1", Status: oc.SessionStatus{Type: oc.StatusRetry, Attempt: 2, Message: "overloaded", Next: 99}},
		&oc.SessionError{SessionID: "ses_1", Error: &oc.NamedError{Name: oc.ErrorNameAPI, Data: oc.NamedErrorData{Message: "no", StatusCode: 529, IsRetryable: true}}},
		&oc.Noise{Type: oc.EventPluginAdded, ID: "anthropic"},
		&oc.TodoUpdated{SessionID: "ses_1", Todos: []oc.Todo{{Content: "x", Status: "pending", Priority: "high"}}},
	}
	for _, p := range payloads {
		ev, err := oc.NewEvent("evt_1", p)
		if err != nil {
			t.Fatalf("%T: %v", p, err)
		}
		if ev.Type != p.EventType() || ev.ID != "evt_1" || reflect.TypeOf(ev.Payload) != reflect.TypeOf(p) {
			t.Fatalf("%T: decoded as %s %T", p, ev.Type, ev.Payload)
		}
		if !reflect.DeepEqual(canonical(t, ev.Payload), canonical(t, p)) {
			t.Errorf("%T: %s decodes to %+v", p, ev.Raw(), ev.Payload)
		}
		again, err := json.Marshal(ev)
		if err != nil || !bytes.Equal(again, ev.Raw()) {
			t.Errorf("%T: an event marshals to its raw bytes: %s, %v", p, again, err)
		}
	}
}
