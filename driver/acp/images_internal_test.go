package acp

import (
	"encoding/json"
	"errors"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/tetherhq/tether/agent"
)

// The capabilities follow the agent's promptCapabilities.image, and a
// session whose agent declared none refuses images as unsupported.
func TestImagesFollowInitialize(t *testing.T) {
	if c := capabilitiesOf(acpsdk.AgentCapabilities{PromptCapabilities: acpsdk.PromptCapabilities{Image: true}}, Spec{}); !c.Images {
		t.Errorf("image declared: %+v", c)
	}
	if c := capabilitiesOf(acpsdk.AgentCapabilities{}, Spec{}); c.Images {
		t.Errorf("no image declared: %+v", c)
	}
	s := &session{d: &Driver{spec: Spec{Name: "textonly"}}}
	err := s.Prompt(t.Context(), agent.Prompt{Text: "look", Images: []agent.Image{{MediaType: "image/png", Data: []byte{1}}}})
	var unsupported *agent.UnsupportedError
	if !errors.As(err, &unsupported) || unsupported.Agent != "textonly" {
		t.Errorf("images to an agent that declared none: %v", err)
	}
}

// A prompt is its images as image blocks, then its text.
func TestPromptBlocks(t *testing.T) {
	got, err := json.Marshal(promptBlocks(agent.Prompt{Text: "look", Images: []agent.Image{{MediaType: "image/webp", Data: []byte("RIFF")}}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"data":"UklGRg==","mimeType":"image/webp","type":"image"},{"text":"look","type":"text"}]`; string(got) != want {
		t.Errorf("blocks %s\nwant   %s", got, want)
	}
}
