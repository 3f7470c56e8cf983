package runview

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tetherhq/tether/agent"
)

// agentApprover answers a Driver's approvals: by the --approve mode, or
// by asking the person, one question at a time. A question the agent
// settles first (an interrupt, the turn's end) is taken down.
type agentApprover struct {
	mode        Approve
	interactive bool
	scr         *screen
	st          style
	lines       *lineSource
	turn        chan struct{} // holds a token while a question is up

	mu     sync.Mutex
	asking map[string]context.CancelFunc // questions up or waiting, by approval id
	warned bool
	wg     sync.WaitGroup
}

func newAgentApprover(cfg Config, scr *screen) *agentApprover {
	return &agentApprover{mode: cfg.Approve, interactive: cfg.InTerminal, scr: scr, st: style{cfg.Color},
		lines: newLineSource(cfg.In), turn: make(chan struct{}, 1), asking: map[string]context.CancelFunc{}}
}

// requested decides at once by the mode, or puts the question to the
// person on its own goroutine: the events go on meanwhile.
func (a *agentApprover) requested(ctx context.Context, sess agent.Session, ap agent.Approval) {
	switch {
	case a.mode == ApproveAllow:
		a.resolve(ctx, sess, allowFirst(ap))
	case a.mode == ApproveDeny:
		a.resolve(ctx, sess, agent.Resolution{ApprovalID: ap.ID, Decision: agent.Deny, Reason: denyByFlag})
	case !a.interactive:
		a.warnOffTerminal(ap)
		a.resolve(ctx, sess, agent.Resolution{ApprovalID: ap.ID, Decision: agent.Deny, Reason: denyNoTerminal})
	default:
		qctx, cancel := context.WithCancel(ctx)
		a.mu.Lock()
		a.asking[ap.ID] = cancel
		a.mu.Unlock()
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			defer a.resolved(ap.ID)
			if r, ok := a.ask(qctx, ap); ok {
				a.resolve(ctx, sess, r)
			}
		}()
	}
}

// allowFirst allows once; a question gets its first option.
func allowFirst(ap agent.Approval) agent.Resolution {
	r := agent.Resolution{ApprovalID: ap.ID, Decision: agent.Allow, Scope: agent.ScopeOnce}
	if ap.Question != nil && len(ap.Question.Options) > 0 {
		r.Answers = []string{ap.Question.Options[0].ID}
	}
	return r
}

// resolve answers; an approval settled first (by the agent, or an
// interrupt) keeps its first answer, which the events show.
func (a *agentApprover) resolve(ctx context.Context, sess agent.Session, r agent.Resolution) {
	if err := sess.Resolve(ctx, r); err != nil {
		a.scr.note(a.st.dim("approval " + r.ApprovalID + ": " + err.Error()))
	}
}

// resolved takes a question down when its approval was settled.
func (a *agentApprover) resolved(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cancel, ok := a.asking[id]; ok {
		cancel()
		delete(a.asking, id)
	}
}

// stop takes every question down and waits for them.
func (a *agentApprover) stop() {
	a.mu.Lock()
	for id, cancel := range a.asking {
		cancel()
		delete(a.asking, id)
	}
	a.mu.Unlock()
	a.wg.Wait()
	a.lines.close()
}

func (a *agentApprover) warnOffTerminal(ap agent.Approval) {
	a.mu.Lock()
	first := !a.warned
	a.warned = true
	a.mu.Unlock()
	if first {
		a.scr.note(a.st.yellow("! " + ap.Title + " needs approval, but stdin is not a terminal: denied. Pass --approve=allow to let tools run, or --approve=deny to silence this."))
	}
}

// ask puts one approval to the person; ok is false when it was taken
// down before an answer.
func (a *agentApprover) ask(ctx context.Context, ap agent.Approval) (agent.Resolution, bool) {
	select {
	case a.turn <- struct{}{}:
		defer func() { <-a.turn }()
	case <-ctx.Done():
		return agent.Resolution{}, false
	}
	question := "Allow " + ap.Title + "? [y]es once / [a]lways / [n]o "
	if ap.Question != nil {
		question = questionText(ap.Question)
	}
	for range maxAsks {
		release := a.scr.ask(a.st.yellow("? ") + question)
		answer, err := a.lines.next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				release(a.st.dim("(withdrawn)") + "\n")
				return agent.Resolution{}, false
			}
			release("\n")
			return agent.Resolution{ApprovalID: ap.ID, Decision: agent.Deny, Reason: denyNoAnswer}, true
		}
		release("")
		if r, ok := readAnswer(ap, answer); ok {
			return r, true
		}
	}
	return agent.Resolution{ApprovalID: ap.ID, Decision: agent.Deny, Reason: denyNoAnswer}, true
}

func questionText(q *agent.Question) string {
	var b strings.Builder
	b.WriteString(q.Prompt)
	for i, o := range q.Options {
		fmt.Fprintf(&b, " [%d] %s", i+1, o.Label)
	}
	if q.MultiSelect {
		b.WriteString(" (numbers, comma-separated; n declines) ")
	} else {
		b.WriteString(" (a number; n declines) ")
	}
	return b.String()
}

// readAnswer reads y/a/n for a tool, option numbers for a question.
func readAnswer(ap agent.Approval, answer string) (agent.Resolution, bool) {
	answer = strings.ToLower(strings.TrimSpace(answer))
	deny := agent.Resolution{ApprovalID: ap.ID, Decision: agent.Deny, Reason: denyByUser}
	if answer == "" || answer == "n" || answer == "no" {
		return deny, true
	}
	if ap.Question != nil {
		return readOptions(ap, answer)
	}
	switch answer {
	case "y", "yes":
		return agent.Resolution{ApprovalID: ap.ID, Decision: agent.Allow, Scope: agent.ScopeOnce}, true
	case "a", "always":
		scope := agent.ScopeOnce
		if slices.Contains(ap.Scopes, agent.ScopeSession) {
			scope = agent.ScopeSession
		}
		return agent.Resolution{ApprovalID: ap.ID, Decision: agent.Allow, Scope: scope}, true
	}
	return agent.Resolution{}, false
}

func readOptions(ap agent.Approval, answer string) (agent.Resolution, bool) {
	fields := strings.FieldsFunc(answer, func(r rune) bool { return r == ',' || r == ' ' })
	if len(fields) > 1 && !ap.Question.MultiSelect {
		return agent.Resolution{}, false
	}
	var ids []string
	for _, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > len(ap.Question.Options) {
			return agent.Resolution{}, false
		}
		ids = append(ids, ap.Question.Options[n-1].ID)
	}
	return agent.Resolution{ApprovalID: ap.ID, Decision: agent.Allow, Scope: agent.ScopeOnce, Answers: ids}, true
}
