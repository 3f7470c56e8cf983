package sessions

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/tetherhq/tether/agent"
)

// A deny for the session (Decision Deny, Scope session) is a rule the core
// keeps: every later call of the same tool in the session is denied
// without asking. The core keeps it rather than the agent so that it holds
// for every agent, whatever its own protocol can say, and across a
// reopen (the session's record carries it).

// resolveTimeout bounds a rule's answers to its agent.
const resolveTimeout = 30 * time.Second

// ruleReason is told to the agent with a call a rule denies.
const ruleReason = "denied for the rest of the session"

// takeDenyRule records a client's deny for the session as a rule over the
// approval's tool, and returns the resolution the agent is handed: a
// plain deny of this call, since the rule is the core's.
func (m *Manager) takeDenyRule(sessionID string, won agent.Resolution) agent.Resolution {
	if won.Decision != agent.Deny || won.Scope != agent.ScopeSession {
		return won
	}
	rec, err := m.cfg.Approvals.Get(sessionID, won.ApprovalID)
	if err == nil && rec.Approval.Kind == agent.ApprovalTool && rec.Approval.Tool != "" {
		if s, gerr := m.get(sessionID); gerr == nil {
			s.addDenyRule(rec.Approval.Tool)
		}
	}
	won.Scope = ""
	return won
}

func (s *session) addDenyRule(tool string) {
	s.mu.Lock()
	if slices.Contains(s.rec.DenyTools, tool) {
		s.mu.Unlock()
		return
	}
	s.rec.DenyTools = append(slices.Clip(s.rec.DenyTools), tool)
	s.mu.Unlock()
	s.save()
}

// ruleDenies is the rule's answer to approval a, if a rule of the
// session denies it. The pump records the answer before the approval's
// event is logged, so that a reader who sees the event finds it settled
// and asks nobody.
func (s *session) ruleDenies(a agent.Approval) (agent.Resolution, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.Kind != agent.ApprovalTool || !slices.Contains(s.rec.DenyTools, a.Tool) {
		return agent.Resolution{}, false
	}
	return agent.Resolution{ApprovalID: a.ID, Decision: agent.Deny, Reason: ruleReason, By: "rule",
		Cause: agent.CauseRule, At: s.m.cfg.Now()}, true
}

// handOverRuled hands the agent, once their events are logged, the
// answers rules gave. It does so on a goroutine of the manager's: the
// pump must not wait on its own agent.
func (s *session) handOverRuled() {
	if len(s.ruled) == 0 {
		return
	}
	ruled := s.ruled
	s.ruled = nil
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
		defer cancel()
		for _, r := range ruled {
			if err := s.agent.Resolve(ctx, r); err != nil && !errors.Is(err, agent.ErrAlreadyResolved) && !errors.Is(err, agent.ErrSessionEnded) {
				s.m.log.Warn("a rule's deny not handed to the agent", "session", s.rec.ID, "agent", s.rec.Agent, "approval", r.ApprovalID, "err", err)
			}
		}
	}()
}
