package codex_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/fakeopenai"
)

// A model set while the session runs is the one the next turn asks the
// API for; Codex has no modes, and a mode is refused.
func TestRealCLIConfigureModel(t *testing.T) {
	r := newRig(t, fakeopenai.Options{}, nil)
	s, w := r.start(agentStart())
	c := s.(agent.Configurable)
	if err := c.Configure(ctxFor(t), agent.Settings{Mode: "plan"}); !errors.Is(err, agent.ErrUnsupported) {
		t.Fatalf("a mode: %v", err)
	}
	const model = "gpt-tether-switched"
	if err := c.Configure(ctxFor(t), agent.Settings{Model: model}); err != nil {
		t.Fatal(err)
	}
	before := len(r.srv.Requests())
	if err := s.Prompt(ctxFor(t), agent.Prompt{Text: "SAY switched"}); err != nil {
		t.Fatal(err)
	}
	if end, _ := w.turnEnd(0); end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("turn.completed %+v\n%s", end.Turn, w.dump())
	}
	var models []string
	for _, req := range r.srv.Requests()[before:] {
		var body struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(req.Body, &body) == nil && body.Model != "" {
			models = append(models, body.Model)
		}
	}
	if !slices.Contains(models, model) {
		t.Fatalf("the turn asked the models %q, not %q", models, model)
	}
}
