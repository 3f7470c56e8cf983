package claudecli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// CLI; the host's SDK speaks the control protocol. The runner still holds
// its policy: host lines are checked and re-encoded (the CLI gets exactly
// what was checked), control requests are limited to hostControlSubtypes,
// and with a sandbox its Bash hook is added to initialize, answered here,
// and every Bash input the host answers with is sandboxed too.
type relayAgent struct {
	conn    transport.Conn
	rewrite *bashRewriter
	log     *slog.Logger

	idMu sync.Mutex
	ids  cc.RequestIDs

	ctx   context.Context // ends with Close
	stop  context.CancelFunc
	wg    sync.WaitGroup
	out   *outQueue   // the CLI's lines, from read
	local chan []byte // lines the runner itself sends the host

	// taken is NextBatch's buffer (Next is called from one goroutine).
	taken []relayOut

	mu sync.Mutex
	// pending are the CLI's requests handed to the host, by request id:
	// only those may be answered, and answers about Bash are sandboxed.
	pending map[string]pendingRequest
}

type relayOut struct {
	line []byte
	typ  string // the line's type, peeked once
	err  error
}

type pendingRequest struct {
	bash    bool
	command string // the Bash command the request is about
}

func newRelayAgent(conn transport.Conn, rewrite *bashRewriter, log *slog.Logger) *relayAgent {
	a := &relayAgent{conn: conn, rewrite: rewrite, log: log,
		out: newOutQueue(), local: make(chan []byte, 16), pending: map[string]pendingRequest{}}
	a.ctx, a.stop = context.WithCancel(context.Background())
	a.wg.Add(1)
	go a.read()
	return a
}

// read moves the CLI's lines to Next, answering the runner's own hook on
// the way; it ends with the output.
func (a *relayAgent) read() {
	defer a.wg.Done()
	for {
		line, err := a.conn.Read(a.ctx)
		if errors.Is(err, ndjson.ErrSkipped) {
			a.log.Warn("claudecli: skipped a line of CLI output", "err", err)
			continue
		}
		var typ string
		if err == nil {
			// The bulk of the output (see ConversationType) needs no
			// scan: only control and result lines matter here.
			if typ = cc.ConversationType(line); typ == "" {
				typ = cc.PeekType(line)
			}
			// Approval requests, hook inputs, permission denials: the
			// host sees the model's commands, never the sandbox's wrapper.
			line = a.rewrite.unwrap(line)
			switch typ {
			case cc.TypeControlRequest:
				if a.answerOwnHook(line) {
					continue
				}
				a.track(line)
			case cc.TypeControlCancelRequest:
				a.untrack(line)
			}
		}
		if a.out.put(a.ctx, relayOut{line, typ, err}) != nil || err != nil {
			return
		}
	}
}

func (a *relayAgent) Next(ctx context.Context) (runner.Output, error) {
	var one [1]runner.Output
	outs, err := a.NextBatch(ctx, one[:0], 1)
	if err != nil {
		return runner.Output{}, err
	}
	return outs[0], nil
}

// NextBatch implements runner.BatchAgent: it waits for output like Next,
// then takes every line already read, up to max.
func (a *relayAgent) NextBatch(ctx context.Context, dst []runner.Output, max int) ([]runner.Output, error) {
	for {
		// The runner's own lines are few (refusals): they go first.
		select {
		case line := <-a.local:
			return append(dst, runner.Output{Line: line}), nil
		default:
		}
		var ok bool
		if a.taken, ok = a.out.take(a.taken[:0], max); ok {
			return a.outputs(dst)
		}
		select {
		case line := <-a.local:
			return append(dst, runner.Output{Line: line}), nil
		case <-a.out.more:
		case <-ctx.Done():
			return dst, ctx.Err()
		case <-a.ctx.Done():
			return dst, transport.ErrClosed
		}
	}
}

// outputs turns the lines taken into outputs; an error is taken alone.
func (a *relayAgent) outputs(dst []runner.Output) ([]runner.Output, error) {
	defer clear(a.taken)
	for _, o := range a.taken {
		switch {
		case errors.Is(o.err, io.EOF):
			return dst, ErrAgentEnded
		case o.err != nil:
			return dst, o.err
		}
		out := runner.Output{Line: o.line}
		if o.typ == cc.TypeResult {
			out.TurnEnded = true
			var r struct {
				IsError bool `json:"is_error"`
			}
			_ = json.Unmarshal(o.line, &r)
			out.TurnFailed = r.IsError
		}
		dst = append(dst, out)
	}
	return dst, nil
}

// track records a CLI request on its way to the host.
func (a *relayAgent) track(line []byte) {
	msg, err := cc.Parse(line)
	if err != nil {
		return
	}
	req, ok := msg.(*cc.ControlRequest)
	if !ok {
		return
	}
	p := pendingRequest{}
	var tool struct {
		ToolName  string          `json:"tool_name"`
		Input     json.RawMessage `json:"input"`      // can_use_tool
		ToolInput json.RawMessage `json:"tool_input"` // hook input
	}
	switch req.Subtype() {
	case cc.SubtypeCanUseTool:
		_ = req.Decode(&tool)
	case cc.SubtypeHookCallback:
		var hc cc.HookCallbackRequest
		if req.Decode(&hc) == nil {
			_ = json.Unmarshal(hc.Input, &tool)
			tool.Input = tool.ToolInput
		}
	}
	if tool.ToolName == "Bash" {
		var in struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(tool.Input, &in)
		p = pendingRequest{bash: true, command: in.Command}
	}
	a.mu.Lock()
	a.pending[req.RequestID] = p
	a.mu.Unlock()
}

func (a *relayAgent) untrack(line []byte) {
	var c struct {
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(line, &c) == nil {
		a.mu.Lock()
		delete(a.pending, c.RequestID)
		a.mu.Unlock()
	}
}

// answerOwnHook answers the runner's sandbox hook; other requests go on to
// the host.
func (a *relayAgent) answerOwnHook(line []byte) bool {
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
	out, _ := a.rewrite.hook(a.ctx, in)
	answer, err := cc.EncodeControlSuccess(req.RequestID, out)
	if err == nil {
		err = a.conn.Write(a.ctx, answer)
	}
	if err != nil {
		a.log.Warn("claudecli: could not answer the sandbox hook", "err", err)
	}
	return true
}

// Input checks a host line and forwards it re-encoded. A refused control
// request is answered with an error, as the CLI would answer one it does
// not know; other refused lines are errors.
func (a *relayAgent) Input(ctx context.Context, line []byte) error {
	msg, err := decodeLine(line)
	if err != nil {
		return fmt.Errorf("claudecli: input line: %w", err)
	}
	typ, _ := msg["type"].(string)
	if !hostLineTypes[typ] {
		return fmt.Errorf("%w: %q lines", ErrRefused, typ)
	}
	switch typ {
	case cc.TypeControlRequest:
		id, _ := msg["request_id"].(string)
		req, _ := msg["request"].(map[string]any)
		subtype, _ := req["subtype"].(string)
		if subtype == "initialize" {
			if line, err = a.initialize(id, req); err != nil {
				return a.refuse(ctx, id, err)
			}
			return a.conn.Write(ctx, line)
		}
		if err := checkControlSubtype(subtype); err != nil {
			return a.refuse(ctx, id, err)
		}
	case cc.TypeControlResponse:
		if !a.answer(msg) {
			return nil
		}
	}
	if line, err = encodeLine(msg); err != nil {
		return err
	}
	return a.conn.Write(ctx, line)
}

// answer checks a host's answer to a CLI request: it must answer one the
// host was asked (not, say, the runner's own hook), and an answer about
// Bash gets its inputs sandboxed. It reports whether to forward it.
func (a *relayAgent) answer(msg map[string]any) bool {
	resp, _ := msg["response"].(map[string]any)
	id, _ := resp["request_id"].(string)
	a.mu.Lock()
	p, ok := a.pending[id]
	delete(a.pending, id)
	a.mu.Unlock()
	if !ok {
		a.log.Warn("claudecli: dropped a host answer to no pending request", "request_id", id)
		return false
	}
	if p.bash && a.rewrite != nil {
		a.rewrite.sandboxUpdatedInputs(resp, p.command)
	}
	return true
}

// refuse answers a host's control request with an error.
func (a *relayAgent) refuse(ctx context.Context, id string, why error) error {
	line, err := cc.EncodeControlError(id, why.Error())
	if err != nil {
		return err
	}
	select {
	case a.local <- line:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// initialize re-encodes the host's initialize from the fields the SDK
// knows (unknown ones could carry what the runner decides, such as an
// agent's inline MCP server), with the runner's sandbox hook first.
func (a *relayAgent) initialize(id string, req map[string]any) ([]byte, error) {
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var init cc.InitializeRequest
	if err := json.Unmarshal(raw, &init); err != nil {
		return nil, fmt.Errorf("%w: initialize: %v", ErrRefused, err)
	}
	if a.rewrite != nil {
		if init.Hooks == nil {
			init.Hooks = map[string][]cc.HookMatcherConfig{}
		}
		init.Hooks[cc.HookPreToolUse] = append([]cc.HookMatcherConfig{{Matcher: "Bash", HookCallbackIDs: []string{sandboxHookID}}}, init.Hooks[cc.HookPreToolUse]...)
	}
	return cc.EncodeControlRequest(id, init)
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

func (a *relayAgent) Close() error {
	err := a.conn.Close()
	a.stop()
	a.wg.Wait()
	return err
}
