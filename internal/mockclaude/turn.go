package mockclaude

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"
)

// Token prices of the mock (Sonnet list prices), so costs look plausible.
const (
	inputPricePerToken  = 3e-6
	outputPricePerToken = 15e-6
	baseInputTokens     = 12
)

// turn is one user message being answered. Scenarios build it from API
// calls (newCall), tool results and a closing result message.
type turn struct {
	s       *session
	ctx     context.Context // cancelled with errInterrupted on interrupt
	proc    context.Context // the process's context (done = stopping)
	delay   time.Duration   // pause between streamed chunks
	prompt  string
	start   time.Time
	calls   int
	in, out int // tokens of completed calls in this turn
	denials []permissionDenial
	inTool  bool // waiting on a tool (permission, hook, MCP)
}

func newTurn(s *session, proc, ctx context.Context, u userTurn) *turn {
	return &turn{s: s, ctx: ctx, proc: proc, delay: s.delay, prompt: u.prompt, start: s.now()}
}

// check returns the cause if the turn was interrupted or the process is
// stopping.
func (t *turn) check() error {
	if t.ctx.Err() != nil {
		return context.Cause(t.ctx)
	}
	return nil
}

// pause waits the configured chunk delay.
func (t *turn) pause() error { return sleep(t.ctx, t.delay) }

// request sends a control request on behalf of a tool step.
func (t *turn) request(body any) (json.RawMessage, error) {
	t.inTool = true
	b, err := t.s.request(t.ctx, body)
	if !isInterrupt(err) {
		t.inTool = false
	}
	return b, err
}

func (t *turn) elapsedMS() int64 {
	d := t.s.now().Sub(t.start).Milliseconds()
	if d < 0 {
		return 0
	}
	return d
}

// userMessage writes a `user` line with content blocks.
func (t *turn) userMessage(content []any, toolUseResult any) error {
	return t.s.out.send(userMsg{
		Type: "user", Message: userParams{Role: "user", Content: content},
		SessionID: t.s.sessionID, UUID: t.s.ids.uuid(), Timestamp: t.s.timestamp(),
		ToolUseResult: toolUseResult,
	})
}

// toolResult writes the user line carrying a tool's result. isError nil
// omits the field, as the real CLI does for successful Write.
func (t *turn) toolResult(toolUseID string, content any, isError *bool, toolUseResult any) error {
	return t.userMessage([]any{toolResultBlock{ToolUseID: toolUseID, Type: "tool_result", Content: content, IsError: isError}}, toolUseResult)
}

// deny records a permission denial for the result message.
func (t *turn) deny(tool, toolUseID string, input json.RawMessage) {
	t.denials = append(t.denials, permissionDenial{ToolName: tool, ToolUseID: toolUseID, ToolInput: input})
}

// success writes the closing result of a completed turn.
func (t *turn) success(text string) error {
	r := t.resultBase()
	r.Subtype = "success"
	r.Result = &text
	r.StopReason = ptr("end_turn")
	r.TerminalReason = "completed"
	return t.s.out.send(r)
}

// interrupted writes the tail the real CLI writes after an interrupt.
func (t *turn) interrupted() error {
	text, reason := "[Request interrupted by user]", "aborted_streaming"
	if t.inTool {
		text, reason = "[Request interrupted by user for tool use]", "aborted_tools"
	}
	if err := t.userMessage([]any{textBlock{Type: "text", Text: text}}, nil); err != nil {
		return err
	}
	r := t.resultBase()
	r.Subtype = "error_during_execution"
	r.IsError = true
	r.NumTurns = t.calls + 1
	r.TerminalReason = reason
	r.Errors = []string{"[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null"}
	return t.s.out.send(r)
}

func (t *turn) resultBase() resultMsg {
	s := t.s
	s.mu.Lock()
	mu := make(map[string]modelUsageInfo, len(s.usage))
	for k, v := range s.usage {
		mu[k] = *v
	}
	cost := s.totalCost
	s.mu.Unlock()
	d := t.elapsedMS()
	denials := t.denials
	if denials == nil {
		denials = []permissionDenial{}
	}
	return resultMsg{
		Type: "result", DurationMS: d, DurationAPIMS: d, NumTurns: t.calls,
		SessionID: s.sessionID, TotalCostUSD: cost, Usage: newResultUsage(t.in, t.out),
		ModelUsage: mu, PermissionDenials: denials, FastModeState: "off", UUID: s.ids.uuid(),
	}
}

// account adds one completed API call to the turn and process totals.
func (t *turn) account(model string, in, out int) {
	t.in += in
	t.out += out
	cost := float64(in)*inputPricePerToken + float64(out)*outputPricePerToken
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.usage[model]
	if u == nil {
		u = &modelUsageInfo{ContextWindow: contextWindow, MaxOutputTokens: 32000}
		s.usage[model] = u
	}
	u.InputTokens += in
	u.OutputTokens += out
	u.CostUSD = roundCost(u.CostUSD + cost)
	s.totalCost = roundCost(s.totalCost + cost)
	s.msgTokens += in + out
}

func roundCost(c float64) float64 { return math.Round(c*1e9) / 1e9 }

func tokensFor(n int) int {
	if n < 4 {
		return 1
	}
	return n / 4
}

// isInterrupt reports whether err means the SDK interrupted the turn.
func isInterrupt(err error) bool { return errors.Is(err, errInterrupted) }
