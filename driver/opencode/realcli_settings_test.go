package opencode

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/internal/testing/testenv"
)

// A mode and a model set while the session runs go with the next prompt:
// the API is asked for the model switched to, and in OpenCode's plan
// agent the model is told it plans. A model that is not provider/model is
// refused, typed.
func TestRealCLIConfigure(t *testing.T) {
	env := newRealEnv(t, nil)
	r := env.start(t, agent.StartRequest{})
	c := r.s.(agent.Configurable)
	if err := c.Configure(t.Context(), agent.Settings{Model: "no-provider"}); !errors.Is(err, agent.ErrInvalidSettings) {
		t.Fatalf("a model without its provider: %v", err)
	}
	if err := c.Configure(t.Context(), agent.Settings{Mode: "plan", Model: "fake/" + testenv.OpenCodeOtherModelID}); err != nil {
		t.Fatal(err)
	}
	before := len(env.fake.Requests())
	r.prompt("SAY planned")
	if end := r.turnEnd(); end.Turn.Status != agent.TurnCompleted {
		t.Fatalf("turn.completed %+v %+v", end.Turn, end.Error)
	}
	var models []string
	planned := false
	for _, req := range env.fake.Requests()[before:] {
		var body struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(req.Body, &body) == nil && body.Model != "" {
			models = append(models, body.Model)
		}
		planned = planned || strings.Contains(strings.ToLower(string(req.Body)), "plan mode")
	}
	if !slices.Contains(models, testenv.OpenCodeOtherModelID) {
		t.Fatalf("the turn asked the models %q, not %q", models, testenv.OpenCodeOtherModelID)
	}
	if !planned {
		t.Fatal("no request of the turn in plan mode says so")
	}
}
