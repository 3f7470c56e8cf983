package acp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/sessions"
)

// turn is one running session/prompt.
type turn struct {
	ctx    context.Context
	stop   context.CancelFunc
	mu     sync.Mutex
	asks   map[string]context.CancelFunc // pending permission requests, by approval
	cancel func()
	done   bool
}

func (f *front) newTurn() *turn {
	ctx, stop := context.WithCancel(f.ctx)
	t := &turn{ctx: ctx, stop: stop, asks: map[string]context.CancelFunc{}}
	t.cancel = sync.OnceFunc(func() {
		t.mu.Lock()
		t.done = true
		for _, c := range t.asks {
			c()
		}
		t.mu.Unlock()
	})
	return t
}

func (t *turn) cancelled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done
}

// Prompt runs one turn: the prompt goes to the core, the turn's events
// come back as session/update, and the answer is its stop reason. The
// SDK cancels the request's context on session/cancel and on a second
// prompt of the session; the turn follows the connection's instead, so
// a refused second prompt leaves the first running.
func (f *front) Prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	id := string(p.SessionId)
	core, info, err := f.session(ctx, id, "", false)
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	if info.State == sessions.StateEnded {
		return acpsdk.PromptResponse{}, acpsdk.NewInvalidRequest(map[string]any{"error": fmt.Sprintf("session %q has ended: session/load it first", id)})
	}
	prompt, err := f.promptOf(p.Prompt)
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	t := f.newTurn()
	defer t.stop()
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return acpsdk.PromptResponse{}, acpsdk.NewInternalError(map[string]any{"error": "tether acp is stopping"})
	}
	if f.turns[id] != nil {
		f.mu.Unlock()
		return acpsdk.PromptResponse{}, acpsdk.NewInvalidRequest(map[string]any{"error": fmt.Sprintf("a prompt is already running in session %q", id)})
	}
	f.turns[id] = t
	f.wg.Add(1)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.turns, id)
		f.mu.Unlock()
		f.wg.Done()
	}()
	req := newRequestID()
	prompt.RequestID = req
	if err := core.Prompt(t.ctx, id, prompt); err != nil {
		return acpsdk.PromptResponse{}, rpcError(err)
	}
	return f.follow(core, id, info, req, t)
}

// follow projects the turn's events until it completes.
func (f *front) follow(core Core, id string, info sessions.Info, req string, t *turn) (acpsdk.PromptResponse, error) {
	pr := newProjector(f.cwdOf(info))
	var mine string
	for e, err := range core.Events(t.ctx, id, info.LastSeq) {
		if err != nil {
			if t.cancelled() {
				return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
			}
			return acpsdk.PromptResponse{}, acpsdk.NewInternalError(map[string]any{"error": err.Error()})
		}
		switch {
		case e.Kind == agent.KindTurnStarted && mine == "" && (e.Turn == nil || e.Turn.RequestID == "" || e.Turn.RequestID == req):
			mine = e.TurnID
			continue
		case e.Kind == agent.KindSessionEnded:
			if t.cancelled() {
				return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
			}
			return acpsdk.PromptResponse{}, acpsdk.NewInternalError(map[string]any{"error": "the session ended during the turn"})
		case mine == "" || e.TurnID != mine:
			continue
		case e.Kind == agent.KindTurnCompleted:
			resp, err := stopReason(e, t.cancelled())
			if u := usage(e.Usage); u != nil {
				// In _meta: the stable schema's answer has no usage yet.
				resp.Meta = map[string]any{"usage": u}
			}
			return resp, err
		case e.Kind == agent.KindApprovalRequested && e.Approval != nil:
			f.ask(core, id, *e.Approval, pr.toolCall(e.Approval.ItemID), t)
		case e.Kind == agent.KindApprovalResolved && e.Resolution != nil:
			t.settled(e.Resolution.ApprovalID)
		}
		for _, u := range pr.project(e, false) {
			if err := f.conn.SessionUpdate(t.ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(id), Update: u}); err != nil {
				f.cfg.Logger.Warn("acp: session/update not sent", "session", id, "err", err)
			}
		}
	}
	return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
}

// usage is a turn's token counts as ACP has them (nil when the agent
// reported none).
func usage(u *agent.Usage) *acpsdk.Usage {
	if u == nil {
		return nil
	}
	out := &acpsdk.Usage{InputTokens: int(u.InputTokens), OutputTokens: int(u.OutputTokens),
		TotalTokens: int(u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.ReasoningTokens)}
	for _, f := range []struct {
		n   int64
		dst **int
	}{{u.CacheReadTokens, &out.CachedReadTokens}, {u.CacheWriteTokens, &out.CachedWriteTokens}, {u.ReasoningTokens, &out.ThoughtTokens}} {
		if f.n > 0 {
			*f.dst = acpsdk.Ptr(int(f.n))
		}
	}
	return out
}

// stopReason is the answer to a turn that completed.
func stopReason(e agent.Event, cancelled bool) (acpsdk.PromptResponse, error) {
	status := agent.TurnCompleted
	if e.Turn != nil {
		status = e.Turn.Status
	}
	switch {
	case status == agent.TurnInterrupted || cancelled:
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
	case status != agent.TurnFailed:
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
	}
	msg := "the turn failed"
	if e.Error != nil {
		msg = e.Error.Message
		if e.Error.Code == agent.ErrorTurnLimit {
			return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonMaxTurnRequests}, nil
		}
	}
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "max_tokens") || strings.Contains(lower, "max tokens") || strings.Contains(lower, "maximum tokens"):
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonMaxTokens}, nil
	case strings.Contains(lower, "refus"):
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonRefusal}, nil
	}
	return acpsdk.PromptResponse{}, acpsdk.NewInternalError(map[string]any{"error": msg})
}

// promptOf is a session/prompt's content as the agent's prompt: text,
// resource links and embedded text resources as text, images (where the
// agent takes them) as images.
func (f *front) promptOf(blocks []acpsdk.ContentBlock) (agent.Prompt, error) {
	var p agent.Prompt
	var b strings.Builder
	add := func(s string) {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(s)
	}
	for _, c := range blocks {
		switch {
		case c.Text != nil:
			add(c.Text.Text)
		case c.ResourceLink != nil:
			add(fmt.Sprintf("[%s](%s)", c.ResourceLink.Name, c.ResourceLink.Uri))
		case c.Resource != nil && c.Resource.Resource.TextResourceContents != nil:
			r := c.Resource.Resource.TextResourceContents
			add(fmt.Sprintf("<resource uri=%q>\n%s\n</resource>", r.Uri, r.Text))
		case c.Image != nil:
			img, err := f.imageOf(len(p.Images), c.Image)
			if err != nil {
				return p, err
			}
			p.Images = append(p.Images, img)
		default:
			return p, acpsdk.NewInvalidParams(map[string]any{"error": "the agent behind tether takes text, resource links, embedded text resources and images only"})
		}
	}
	if b.Len() == 0 {
		return p, acpsdk.NewInvalidParams(map[string]any{"error": "the prompt has no text"})
	}
	p.Text = b.String()
	return p, nil
}

// imageOf is the n-th image block of a prompt as the agent's image, or an
// invalid-params error that says why not.
func (f *front) imageOf(n int, c *acpsdk.ContentBlockImage) (agent.Image, error) {
	if !f.cfg.Capabilities.Images {
		return agent.Image{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf(
			"the %s agent behind tether takes no images: send the prompt as text", f.cfg.Agent)})
	}
	data, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		return agent.Image{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("image %d: its data is not base64: %v", n, err)})
	}
	img := agent.Image{MediaType: c.MimeType, Data: data}
	if err := img.Validate(); err != nil {
		return agent.Image{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("image %d: %v", n, err)})
	}
	return img, nil
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "acp-" + hex.EncodeToString(b[:])
}
