package codex

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/driver/internal/outbox"
	"github.com/tetherhq/tether/protocol/codexapp"
)

var replayTime = time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)

// transcriptLine is one line of a capture of the real app-server: dir "<"
// is what the server printed, ">" what the client sent.
type transcriptLine struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

// replay feeds a capture through the session's mapping, without a process:
// the server's lines as the reader handles them, the client's approval
// answers and interrupts as Resolve and Interrupt record them. It returns
// every event, each one checked with Validate, and the raw server lines
// by index for row checks.
func replay(t *testing.T, name string) []agent.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &session{log: slog.New(slog.DiscardHandler), now: func() time.Time { return replayTime },
		out: outbox.New(1 << 20), m: newMapper(func() time.Time { return replayTime }), approvals: newApprovals()}
	sent := map[string]string{} // request id → method, of the client's requests
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l transcriptLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		switch l.Dir {
		case "<":
			s.replayServer(t, l.Msg, sent)
		case ">":
			s.replayClient(t, l.Msg, sent)
		case "exit":
			s.closing = true
			s.end(nil)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	events := s.out.Queued()
	for i, e := range events {
		if err := e.Validate(); err != nil {
			t.Errorf("event %d: %v: %+v", i, err, e)
		}
	}
	return events
}

func (s *session) replayServer(t *testing.T, line []byte, sent map[string]string) {
	msg, err := codexapp.Decode(line)
	resp, ok := msg.(*codexapp.Response)
	if !ok {
		s.handle(line)
		return
	}
	if err != nil {
		t.Fatalf("decode %s: %v", line, err)
	}
	switch sent[resp.ID.String()] {
	case codexapp.MethodThreadStart:
		var r codexapp.ThreadResponse
		if err := resp.DecodeResult(&r); err != nil {
			t.Fatal(err)
		}
		s.thread = r.Thread.ID
		s.out.Add(s.m.startSession(r.Thread.ID, r.Model, r.Thread.Cwd, nil))
	}
}

func (s *session) replayClient(t *testing.T, line []byte, sent map[string]string) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result *struct {
			Decision string                              `json:"decision"`
			Answers  map[string]codexapp.UserInputAnswer `json:"answers"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	switch {
	case m.Method != "":
		sent[string(m.ID)] = m.Method
		if m.Method == codexapp.MethodTurnInterrupt {
			s.out.Add(s.approvals.clear(agent.CauseInterrupted, s.m, s.now())...)
		}
	case m.Result != nil:
		var id codexapp.ID
		if err := id.UnmarshalJSON(m.ID); err != nil {
			t.Fatal(err)
		}
		ap := s.approvals.byRequest[id]
		if ap == nil {
			t.Fatalf("an answer to no approval: %s", line)
		}
		r := agent.Resolution{Decision: agent.Deny, Cause: agent.CauseClient, At: s.now()}
		if m.Result.Decision == codexapp.DecisionAccept || m.Result.Decision == codexapp.DecisionAcceptForSession {
			r.Decision = agent.Allow
		}
		if ap.userInput != nil && len(m.Result.Answers) > 0 {
			r.Decision = agent.Allow
			r.Answers = ap.question.IDs(m.Result.Answers[ap.userInput.Questions[0].ID].Answers)
		}
		if _, err := s.approvals.settle(ap.id, r); err != nil {
			t.Fatal(err)
		}
		s.out.Add(resolvedEvent(s.m, *ap.first, nil))
	}
}

// method is the JSON-RPC method of an event's raw line.
func method(e agent.Event) string {
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(e.Raw, &m)
	return m.Method
}

// find returns the events of kind k, and of the item type typ when set.
func find(events []agent.Event, k agent.Kind, typ agent.ItemType) []agent.Event {
	var out []agent.Event
	for _, e := range events {
		if e.Kind == k && (typ == "" || (e.Item != nil && e.Item.Type == typ)) {
			out = append(out, e)
		}
	}
	return out
}
