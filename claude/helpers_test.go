package claude_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/mockclaude"
	"github.com/tetherhq/tether/transport"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the mock CLI for subprocess tests.
	if os.Getenv("TETHER_MOCKCLAUDE_MAIN") == "1" {
		os.Exit(mockclaude.Main())
	}
	goleak.VerifyTestMain(m)
}

// agent is the far end of an in-memory transport, played by the test.
type agent struct {
	t    *testing.T
	conn transport.Conn
}

func newPair(t *testing.T) (*transport.Memory, *agent) {
	mem := transport.NewMemory()
	return mem, &agent{t: t, conn: mem.Agent()}
}

// next reads the client's next line as a generic object.
func (a *agent) next() map[string]any {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	line, err := a.conn.Read(ctx)
	if err != nil {
		a.t.Fatalf("agent read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		a.t.Fatalf("client wrote non-JSON %q: %v", line, err)
	}
	return m
}

func (a *agent) send(line string) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.conn.Write(ctx, []byte(line)); err != nil {
		a.t.Fatalf("agent write: %v", err)
	}
}

func (a *agent) sendJSON(v any) {
	a.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		a.t.Fatal(err)
	}
	a.send(string(b))
}

// answerInitialize reads initialize and answers it; it returns the request.
func (a *agent) answerInitialize() map[string]any {
	a.t.Helper()
	m := a.next()
	req := m["request"].(map[string]any)
	if m["type"] != "control_request" || req["subtype"] != "initialize" {
		a.t.Fatalf("first line is not initialize: %v", m)
	}
	a.success(m["request_id"].(string), map[string]any{"commands": []any{}, "models": []any{map[string]any{"value": "m1"}}, "output_style": "default"})
	return req
}

func (a *agent) success(id string, payload any) {
	a.sendJSON(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": id, "response": payload}})
}

const (
	initLine      = `{"type":"system","subtype":"init","session_id":"s-1","model":"m1","tools":["Bash"],"cwd":"/w"}`
	assistantLine = `{"type":"assistant","message":{"id":"m","role":"assistant","model":"m1","content":[{"type":"text","text":"hello"}]},"parent_tool_use_id":null,"session_id":"s-1"}`
	resultLine    = `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"hello","session_id":"s-1","total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":3}}`
)

func connect(t *testing.T, mem *transport.Memory, a *agent, opts claude.Options) *claude.Client {
	t.Helper()
	opts.Transport = mem
	type res struct {
		c   *claude.Client
		err error
	}
	done := make(chan res, 1)
	go func() {
		c, err := claude.Connect(context.Background(), opts)
		done <- res{c, err}
	}()
	a.answerInitialize()
	r := <-done
	if r.err != nil {
		t.Fatalf("connect: %v", r.err)
	}
	t.Cleanup(func() { _ = r.c.Close() })
	return r.c
}
