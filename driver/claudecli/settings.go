package claudecli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tetherhq/tether/agent"
)

// modes are the permission modes a client may switch a session to. The
// ones that stop asking altogether (bypassPermissions, dontAsk) are left
// to a runner's options: a client's switch would take every later call
// out of the runner's approvals.
func modes() []agent.Mode {
	return []agent.Mode{
		{ID: "default", Name: "Default", Description: "asks before it edits a file or runs a command"},
		{ID: "acceptEdits", Name: "Accept edits", Description: "edits files without asking; asks before commands"},
		{ID: "plan", Name: "Plan", Description: "reads and plans; changes nothing"},
	}
}

// models are the CLI's own aliases for the current models of each family.
func models() []string { return []string{"sonnet", "opus", "haiku"} }

// Configure switches the CLI's permission mode or model through its
// control protocol (set_permission_mode, set_model): they apply from the
// CLI's next request to the model.
func (s *canonicalSession) Configure(ctx context.Context, set agent.Settings) error {
	for _, c := range []struct{ subtype, key, value string }{
		{"set_permission_mode", "mode", set.Mode}, {"set_model", "model", set.Model},
	} {
		if c.value == "" {
			continue
		}
		params, _ := json.Marshal(map[string]string{c.key: c.value}) // strings: never fails
		if _, err := s.link.control(ctx, c.subtype, params); err != nil {
			return fmt.Errorf("claudecli: %s: %w", c.subtype, err)
		}
	}
	return nil
}
