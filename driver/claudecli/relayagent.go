package claudecli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"

	cc "github.com/tetherhq/tether/protocol/claudecode"
	"github.com/tetherhq/tether/protocol/ndjson"
	"github.com/tetherhq/tether/runner"
	"github.com/tetherhq/tether/transport"
)

// sandboxHookID is the runner's own hook callback in relay sessions.
const sandboxHookID = "tether_sandbox_bash"

// relayAgent hands the CLI's lines to the host and the host's lines to the
// CLI; the host's SDK speaks the control protocol.
type relayAgent struct {
	conn    transport.Conn
	rewrite *bashRewriter
	log     *slog.Logger

	idMu sync.Mutex
	ids  cc.RequestIDs
}

func newRelayAgent(conn transport.Conn, rewrite *bashRewriter, log *slog.Logger) *relayAgent {
	return &relayAgent{conn: conn, rewrite: rewrite, log: log}
}

func (a *relayAgent) Next(ctx context.Context) (runner.Output, error) {
	for {
		line, err := a.conn.Read(ctx)
		if errors.Is(err, ndjson.ErrSkipped) {
			a.log.Warn("claudecli: skipped a line of CLI output", "err", err)
			continue
		}
		if errors.Is(err, io.EOF) {
			return runner.Output{}, ErrAgentEnded
		}
		if err != nil {
			return runner.Output{}, err
		}
		typ := cc.PeekType(line)
		if typ == cc.TypeControlRequest && a.answerOwnHook(ctx, line) {
			continue
		}
		out := runner.Output{Line: line}
		if typ == cc.TypeResult {
			out.TurnEnded = true
			var r struct {
				IsError bool `json:"is_error"`
			}
			_ = json.Unmarshal(line, &r)
			out.TurnFailed = r.IsError
		}
		return out, nil
	}
}

// answerOwnHook answers the runner's sandbox hook; other requests go on to
// the host.
func (a *relayAgent) answerOwnHook(ctx context.Context, line []byte) bool {
	if a.rewrite == nil {
		return false
	}
	msg, err := cc.Parse(line)
	if err != nil {
		return false
	}
	req, ok := msg.(*cc.ControlRequest)
	if !ok || req.Subtype() != cc.SubtypeHookCallback {
		return false
	}
	var hc cc.HookCallbackRequest
	if req.Decode(&hc) != nil || hc.CallbackID != sandboxHookID {
		return false
	}
	in, _ := cc.ParseHookInput(hc.Input)
	out, _ := a.rewrite.hook(ctx, in)
	answer, err := cc.EncodeControlSuccess(req.RequestID, out)
	if err == nil {
		err = a.conn.Write(ctx, answer)
	}
	if err != nil {
		a.log.Warn("claudecli: could not answer the sandbox hook", "err", err)
	}
	return true
}

// Input forwards a host line; the host's initialize gets the runner's
// sandbox hook added, so the runner still enforces it.
func (a *relayAgent) Input(ctx context.Context, line []byte) error {
	if a.rewrite != nil && cc.PeekType(line) == cc.TypeControlRequest {
		line = a.withSandboxHook(line)
	}
	return a.conn.Write(ctx, line)
}

func (a *relayAgent) withSandboxHook(line []byte) []byte {
	var env struct {
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
	}
	if json.Unmarshal(line, &env) != nil {
		return line
	}
	var req map[string]json.RawMessage
	if json.Unmarshal(env.Request, &req) != nil || string(req["subtype"]) != `"initialize"` {
		return line
	}
	hooks := map[string][]cc.HookMatcherConfig{}
	if raw, ok := req["hooks"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &hooks) != nil {
			return line
		}
	}
	hooks[cc.HookPreToolUse] = append([]cc.HookMatcherConfig{{Matcher: "Bash", HookCallbackIDs: []string{sandboxHookID}}}, hooks[cc.HookPreToolUse]...)
	req["hooks"], _ = json.Marshal(hooks)
	env.Request, _ = json.Marshal(req)
	out, err := json.Marshal(env)
	if err != nil {
		return line
	}
	return out
}

func (a *relayAgent) Prompt(ctx context.Context, prompt json.RawMessage) error {
	in, err := userInput(prompt)
	if err != nil {
		return err
	}
	line, err := cc.EncodeUserInput(in)
	if err != nil {
		return err
	}
	return a.conn.Write(ctx, line)
}

func (a *relayAgent) Control(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("claudecli: in a relay session the host sends control requests itself")
}

func (a *relayAgent) Interrupt(ctx context.Context) error {
	a.idMu.Lock()
	id := a.ids.Next()
	a.idMu.Unlock()
	line, err := cc.EncodeControlRequest(id, cc.InterruptRequest{})
	if err != nil {
		return err
	}
	return a.conn.Write(ctx, line)
}

func (a *relayAgent) Close() error { return a.conn.Close() }
