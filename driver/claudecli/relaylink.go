package claudecli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"sync"

	"github.com/tetherhq/tether/claude"
	cc "github.com/tetherhq/tether/protocol/claudecode"
	"github.com/tetherhq/tether/protocol/ndjson"
	"github.com/tetherhq/tether/transport"
)

// sandboxHookID is the runner's own hook callback in relay sessions.
const sandboxHookID = "tether_sandbox_bash"

// relayLink is the CLI's lines as they are, for a native client that
// speaks the control protocol itself (protocol v1's host_control): the
// client's lines go to the CLI and every line of the CLI's reaches the
// session. The runner still holds its policy: client lines are checked
// and re-encoded (the CLI gets exactly what was checked), control
// requests are limited to hostControlSubtypes, and with a sandbox its
// Bash hook is added to initialize, answered here, and every Bash input a
// client answers with is sandboxed too.
type relayLink struct {
	conn    transport.Conn
	rewrite *bashRewriter
	log     *slog.Logger
	sid     string
	// lineError is told of a line that could not be read; refused is
	// handed the runner's answer to a client request it refuses, a line
	// the client reads among the CLI's.
	lineError func(error)
	refused   func(line []byte)

	idMu sync.Mutex
	ids  cc.RequestIDs

	mu sync.Mutex
	// pending are the CLI's requests handed to the client, by request
	// id: only those may be answered, and answers about Bash are
	// sandboxed.
	pending map[string]pendingRequest
	failure error
}

type pendingRequest struct {
	bash    bool
	command string // the Bash command the request is about
	// input is what the CLI asked about as it asked (a wrapped Bash
	// command included): an allow the runner gives itself runs that.
	input json.RawMessage
}

func newRelayLink(conn transport.Conn, sid string, rewrite *bashRewriter, log *slog.Logger) *relayLink {
	return &relayLink{conn: conn, sid: sid, rewrite: rewrite, log: log, pending: map[string]pendingRequest{}}
}

func (l *relayLink) sessionID() string { return l.sid }

// messages reads the CLI's lines until its output ends, answering the
// runner's own hook on the way.
func (l *relayLink) messages(ctx context.Context) iter.Seq2[claude.Message, error] {
	return func(yield func(claude.Message, error) bool) {
		for {
			line, err := l.conn.Read(ctx)
			switch {
			case errors.Is(err, ndjson.ErrSkipped):
				l.lineError(err)
				continue
			case errors.Is(err, io.EOF):
				return
			case err != nil:
				l.mu.Lock()
				l.failure = err
				l.mu.Unlock()
				yield(nil, err)
				return
			}
			msg, err := cc.Parse(line)
			if err != nil {
				l.lineError(err)
				continue
			}
			if req, ok := msg.(*cc.ControlRequest); ok {
				if l.answerOwnHook(ctx, req) {
					continue
				}
				l.track(req)
			}
			if c, ok := msg.(*cc.ControlCancelRequest); ok {
				l.untrack(c.RequestID)
			}
			if !yield(msg, nil) {
				return
			}
		}
	}
}

func (l *relayLink) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failure
}

// track records a CLI request on its way to the client.
func (l *relayLink) track(req *cc.ControlRequest) {
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
	p := pendingRequest{input: tool.Input}
	if tool.ToolName == "Bash" {
		var in struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(tool.Input, &in)
		p.bash, p.command = true, in.Command
	}
	l.mu.Lock()
	l.pending[req.RequestID] = p
	l.mu.Unlock()
}

func (l *relayLink) untrack(id string) (pendingRequest, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pending[id]
	delete(l.pending, id)
	return p, ok
}

// answerOwnHook answers the runner's sandbox hook; other requests go on to
// the client.
func (l *relayLink) answerOwnHook(ctx context.Context, req *cc.ControlRequest) bool {
	if l.rewrite == nil || req.Subtype() != cc.SubtypeHookCallback {
		return false
	}
	var hc cc.HookCallbackRequest
	if req.Decode(&hc) != nil || hc.CallbackID != sandboxHookID {
		return false
	}
	in, _ := cc.ParseHookInput(hc.Input)
	out, _ := l.rewrite.hook(ctx, in)
	answer, err := cc.EncodeControlSuccess(req.RequestID, out)
	if err == nil {
		err = l.conn.Write(ctx, answer)
	}
	if err != nil {
		l.log.Warn("claudecli: could not answer the sandbox hook", "err", err)
	}
	return true
}

// input checks a client's line and writes it re-encoded. A refused
// control request is answered with an error, as the CLI would answer one
// it does not know; other refused lines are errors. answered is told of
// an answer to one of the CLI's requests before it goes (false: drop it).
func (l *relayLink) input(ctx context.Context, msg map[string]any, answered func(id string, p pendingRequest, resp map[string]any) bool) error {
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
			line, err := l.initialize(id, req)
			if err != nil {
				return l.refuse(id, err)
			}
			return l.conn.Write(ctx, line)
		}
		if err := checkControlSubtype(subtype); err != nil {
			return l.refuse(id, err)
		}
	case cc.TypeControlResponse:
		resp, _ := msg["response"].(map[string]any)
		id, _ := resp["request_id"].(string)
		p, ok := l.untrack(id)
		if !ok {
			l.log.Warn("claudecli: dropped a client's answer to no pending request", "request_id", id)
			return nil
		}
		if !answered(id, p, resp) {
			return nil
		}
		if p.bash && l.rewrite != nil {
			l.rewrite.sandboxUpdatedInputs(resp, p.command)
		}
	}
	line, err := encodeLine(msg)
	if err != nil {
		return err
	}
	return l.conn.Write(ctx, line)
}

// refuse answers a client's control request with an error.
func (l *relayLink) refuse(id string, why error) error {
	line, err := cc.EncodeControlError(id, why.Error())
	if err != nil {
		return err
	}
	l.refused(line)
	return nil
}

// initialize re-encodes the client's initialize from the fields the SDK
// knows (unknown ones could carry what the runner decides, such as an
// agent's inline MCP server), with the runner's sandbox hook first.
func (l *relayLink) initialize(id string, req map[string]any) ([]byte, error) {
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var init cc.InitializeRequest
	if err := json.Unmarshal(raw, &init); err != nil {
		return nil, fmt.Errorf("%w: initialize: %v", ErrRefused, err)
	}
	if l.rewrite != nil {
		if init.Hooks == nil {
			init.Hooks = map[string][]cc.HookMatcherConfig{}
		}
		init.Hooks[cc.HookPreToolUse] = append([]cc.HookMatcherConfig{{Matcher: "Bash", HookCallbackIDs: []string{sandboxHookID}}}, init.Hooks[cc.HookPreToolUse]...)
	}
	return cc.EncodeControlRequest(id, init)
}

// pendingInput is what the CLI asked about in request id, as it asked.
func (l *relayLink) pendingInput(id string) (json.RawMessage, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pending[id]
	return p.input, ok
}

func (l *relayLink) send(ctx context.Context, in claude.UserInput) error {
	line, err := cc.EncodeUserInput(in)
	if err != nil {
		return err
	}
	return l.conn.Write(ctx, line)
}

func (l *relayLink) control(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("claudecli: in a relay session the client sends control requests itself")
}

func (l *relayLink) interrupt(ctx context.Context) error {
	l.idMu.Lock()
	id := l.ids.Next()
	l.idMu.Unlock()
	line, err := cc.EncodeControlRequest(id, cc.InterruptRequest{})
	if err != nil {
		return err
	}
	return l.conn.Write(ctx, line)
}

func (l *relayLink) close() error { return l.conn.Close() }
