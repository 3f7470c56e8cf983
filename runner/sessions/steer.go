package sessions

import (
	"context"

	"github.com/tetherhq/tether/agent"
)

// Steer adds text to the session's running turn, where its agent can
// (*agent.UnsupportedError where it cannot, agent.ErrNoTurn with no turn).
func (m *Manager) Steer(ctx context.Context, id string, p agent.Prompt) error {
	s, err := m.get(id)
	if err != nil {
		return err
	}
	if err := s.prepared(ctx); err != nil {
		return err
	}
	return s.agent.Steer(ctx, p)
}
