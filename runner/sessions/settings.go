package sessions

import (
	"context"

	"github.com/tetherhq/tether/agent"
)

// Configure changes a running session's mode or model (agent.Settings):
// the agent is told first, then the session's record, so a reopen starts
// the agent as it was left.
func (m *Manager) Configure(ctx context.Context, id string, set agent.Settings) (Info, error) {
	s, err := m.get(id)
	if err != nil {
		return Info{}, err
	}
	if err := m.cfg.Drivers[s.rec.Agent].Capabilities().CheckSettings(s.rec.Agent, set); err != nil {
		return Info{}, err
	}
	if set == (agent.Settings{}) {
		return s.snapshot(), nil
	}
	if s.snapshot().State == StateEnded {
		return Info{}, agent.ErrSessionEnded
	}
	if err := s.prepared(ctx); err != nil {
		return Info{}, err
	}
	c, ok := s.agent.(agent.Configurable)
	if !ok {
		return Info{}, &agent.UnsupportedError{Agent: s.rec.Agent, Capability: "change its settings"}
	}
	if err := c.Configure(ctx, set); err != nil {
		return Info{}, err
	}
	s.mu.Lock()
	if set.Mode != "" {
		s.rec.Mode = set.Mode
	}
	if set.Model != "" {
		s.rec.Model = set.Model
	}
	s.mu.Unlock()
	s.save()
	return s.snapshot(), nil
}
