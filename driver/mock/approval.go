package mock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/tetherhq/tether/agent"
)

// pendingApproval is an approval the turn waits on. It stays in the
// session after its resolution, so a second one learns the first.
type pendingApproval struct {
	approval agent.Approval
	answer   chan agent.Resolution // buffered 1: only the first is sent
	first    *agent.Resolution
}

// ask requests an approval and waits for its resolution. An interrupt or
// the session's close resolves it first (deny, CauseInterrupted or
// CauseTurnEnded); then the turn's context error is returned.
func (t *turnRun) ask(a agent.Approval) (agent.Resolution, error) {
	s := t.s
	s.mu.Lock()
	a.ID = t.id + "/approval-" + strconv.Itoa(len(s.pending)+1)
	a.SessionID, a.Agent, a.TurnID, a.Created = s.conv.nativeID, "mock", t.id, s.d.cfg.Now()
	p := &pendingApproval{approval: a, answer: make(chan agent.Resolution, 1)}
	s.pending[a.ID] = p
	s.emitLocked(t.event(agent.KindApprovalRequested, func(e *agent.Event) { e.Approval = &a }))
	s.mu.Unlock()
	var r agent.Resolution
	select {
	case r = <-p.answer:
	case <-t.ctx.Done():
		cause := agent.CauseInterrupted
		if !errors.Is(context.Cause(t.ctx), errInterrupted) {
			cause = agent.CauseTurnEnded
		}
		_ = s.settle(a.ID, agent.Resolution{Decision: agent.Deny, Reason: context.Cause(t.ctx).Error(), Cause: cause})
		r = <-p.answer // ours, or one that came first
	}
	s.emitNow(t.event(agent.KindApprovalResolved, func(e *agent.Event) { e.Resolution = &r }))
	if err := t.ctx.Err(); err != nil {
		return r, err
	}
	if r.Decision == agent.Allow && r.Scope == agent.ScopeSession {
		s.allowForSession(a.Tool)
	}
	return r, nil
}

func (s *session) allowedForSession(tool string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionAllowed[tool]
}

func (s *session) allowForSession(tool string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionAllowed[tool] = true
}

// Resolve answers a pending approval; the first answer wins, a later one
// gets an *agent.AlreadyResolvedError.
func (s *session) Resolve(_ context.Context, r agent.Resolution) error {
	if r.Decision != agent.Allow && r.Decision != agent.Deny {
		return &agent.InvalidEventError{Kind: agent.KindApprovalResolved, Reason: "decision " + strconv.Quote(string(r.Decision))}
	}
	if r.Cause == "" {
		r.Cause = agent.CauseClient
	}
	return s.settle(r.ApprovalID, r)
}

// settle records the first resolution of id and wakes its turn.
func (s *session) settle(id string, r agent.Resolution) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pending[id]
	switch {
	case !ok:
		return fmt.Errorf("%w: %s", agent.ErrUnknownApproval, id)
	case p.first != nil:
		return &agent.AlreadyResolvedError{First: *p.first}
	}
	if err := fits(p.approval, r); err != nil {
		return err
	}
	r.ApprovalID = id
	if r.At.IsZero() {
		r.At = s.d.cfg.Now()
	}
	p.first = &r
	p.answer <- r
	return nil
}

// fits checks a resolution against its approval: a scope it offers, and a
// question's answers among its options.
func fits(a agent.Approval, r agent.Resolution) error {
	if r.Decision != agent.Allow {
		return nil
	}
	if r.Scope != "" && !slices.Contains(a.Scopes, r.Scope) {
		return &agent.UnsupportedError{Agent: "mock", Capability: "allow with scope " + string(r.Scope)}
	}
	if a.Question == nil {
		return nil
	}
	for _, id := range r.Answers {
		if !slices.ContainsFunc(a.Question.Options, func(o agent.Option) bool { return o.ID == id }) {
			return fmt.Errorf("%w: %q is not an option of %s", ErrBadAnswer, id, a.ID)
		}
	}
	return nil
}
