package sessions

import (
	"context"

	"github.com/tetherhq/tether/agent"
)

// Steer adds text to the session's running turn, where its agent can
// (*agent.UnsupportedError where it cannot, agent.ErrNoTurn with no turn).
func (m *Manager) Steer(ctx context.Context, id, text string) error {
	s, err := m.get(id)
	if err != nil {
		return err
	}
	return s.agent.Steer(ctx, agent.Prompt{Text: text})
}
