package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/runner/approvals"
)

// Approvals lists the approvals still waiting, across sessions.
func (m *Manager) Approvals() ([]approvals.Record, error) { return m.cfg.Approvals.Pending() }

// Resolve answers an approval. The durable store decides who was first;
// the winner is then handed to the agent. A later answer gets
// *agent.AlreadyResolvedError with the first.
func (m *Manager) Resolve(ctx context.Context, sessionID string, r agent.Resolution) (agent.Resolution, error) {
	if err := m.checkScope(sessionID, r); err != nil {
		return agent.Resolution{}, err
	}
	if err := m.checkInput(sessionID, r); err != nil {
		return agent.Resolution{}, err
	}
	won, err := m.cfg.Approvals.Resolve(sessionID, r)
	if err != nil {
		return agent.Resolution{}, err
	}
	s, err := m.get(sessionID)
	if err != nil {
		return won, nil // the session is gone; the decision is recorded
	}
	if err := s.agent.Resolve(ctx, m.takeDenyRule(sessionID, won)); err != nil && !errors.Is(err, agent.ErrAlreadyResolved) && !errors.Is(err, agent.ErrSessionEnded) {
		return won, err
	}
	return won, nil
}

// Expire applies the default decision to every approval past its expiry
// and hands it to its agent. The runner calls it on a timer.
func (m *Manager) Expire(ctx context.Context) ([]approvals.Record, error) {
	expired, err := m.cfg.Approvals.Expire()
	for _, rec := range expired {
		if s, serr := m.get(rec.Approval.SessionID); serr == nil {
			if rerr := s.agent.Resolve(ctx, *rec.Resolution); rerr != nil && !errors.Is(rerr, agent.ErrAlreadyResolved) {
				m.log.Warn("expired approval not handed to its agent", "session", rec.Approval.SessionID, "agent", rec.Approval.Agent, "err", rerr)
			}
		}
	}
	return expired, err
}

// checkInput refuses an allow's edited input that is not a JSON object,
// or that the session's agent would not take (it would run the call as
// asked), before anything is decided.
func (m *Manager) checkInput(sessionID string, r agent.Resolution) error {
	if len(r.Input) == 0 || r.Decision != agent.Allow {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(r.Input, &obj) != nil || obj == nil {
		return &agent.InvalidEventError{Kind: agent.KindApprovalResolved, Reason: "input is not a JSON object"}
	}
	s, err := m.get(sessionID)
	if err != nil {
		return nil // an ended session's approval: the store answers
	}
	if !m.cfg.Drivers[s.rec.Agent].Capabilities().EditInput {
		return &agent.UnsupportedError{Agent: s.rec.Agent, Capability: "allow a call with edited input"}
	}
	return nil
}

// checkScope refuses an allow's scope the session's agent does not have,
// and a deny's beyond the session (the core keeps a session's rules, no
// agent's), before anything is decided: the approval stays open for a
// good answer.
func (m *Manager) checkScope(sessionID string, r agent.Resolution) error {
	scope := r.Scope
	if scope == "" || scope == agent.ScopeOnce {
		return nil
	}
	if r.Decision == agent.Deny {
		if scope != agent.ScopeSession {
			return &agent.UnsupportedError{Agent: "tether", Capability: "deny with scope " + string(scope)}
		}
		return nil
	}
	s, err := m.get(sessionID)
	if err != nil {
		return nil // an ended session's approval: the store answers
	}
	if !slices.Contains(m.cfg.Drivers[s.rec.Agent].Capabilities().Scopes, scope) {
		return &agent.UnsupportedError{Agent: s.rec.Agent, Capability: "allow with scope " + string(scope)}
	}
	return nil
}
